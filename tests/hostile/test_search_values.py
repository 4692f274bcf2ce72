"""v1 search values are JSON scalars from the query string: hostile ones answer 400, not 500."""

from __future__ import annotations

import pytest

from harness.servers import Api


@pytest.mark.parametrize("value", ['"\\ud800"', "[" * 1100, '"\\udc00x"'],
                         ids=["lone-surrogate", "deep-nesting", "lone-low-surrogate"])
def test_hostile_search_value_is_400(admin: Api, new_app: str, value: str) -> None:
    r = admin.get(f"/v1/app/{new_app}/search", params={"x": value})
    assert r.status_code == 400, r.text
    assert "search value" in r.json()["error"]


def test_ordinary_search_value_still_searches(admin: Api, new_app: str, new_obj: str) -> None:
    put = admin.put(f"/v2/app/{new_app}/object/{new_obj}", json={"x": "caf\u00e9 \U0001f600"})
    assert put.status_code in (201, 204), put.text
    r = admin.get(f"/v1/app/{new_app}/search", params={"x": '"caf\\u00e9 \\ud83d\\ude00"'})
    assert r.status_code == 200, r.text
    assert new_obj in r.json()
