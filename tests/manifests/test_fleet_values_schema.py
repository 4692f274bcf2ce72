"""The fleet deployment schema's value layers: customizations, profiles, profileLabel."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from fplus import manifests

SCHEMA = manifests.load("schemas")["fleet-deployment"]
U = "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f"
FLEET = {"name": "h", "chart": U, "selector": {}}


@pytest.mark.parametrize(("extra", "ok"), [
    ({"customizations": [{"selector": {"matchLabels": {"site": "leeds"}},
                          "values": {"b": "{{cluster.labels.site}}"}}]}, True),
    ({"customizations": [{"selector": {}}]}, False),
    ({"customizations": [{"selector": {"bogus": 1}, "values": {}}]}, False),
    ({"customizations": [{"selector": {}, "values": [1]}]}, False),
    ({"customizations": {}}, False),
    ({"profiles": {"big": {"a": 1}, "small_1.x": {}}}, True),
    ({"profiles": {"not a name": {}}}, False),
    ({"profiles": {"big": 1}}, False),
    ({"profileLabel": "example.com/profile"}, True),
    ({"profileLabel": ""}, False),
])
def test_value_layers(extra: dict[str, Any], ok: bool) -> None:
    assert Draft202012Validator(SCHEMA).is_valid(FLEET | extra) is ok
