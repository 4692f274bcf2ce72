"""json-templates semantics, as table tests."""

from __future__ import annotations

from typing import Any

import pytest

from fplus.templating import render

CTX = {"name": "Shop-Floor", "uuid": "c1d2", "n": 3, "flag": False, "none": None,
       "url": {"self": "http://git/uuid/c1d2", "helm": "http://git/uuid/h"},
       "values": {"a": {"b": 1}}, "list": ["x", "y"]}


@pytest.mark.parametrize(("template", "expected"), [
    ("{{name}}", "Shop-Floor"),
    ("{{ name }}", "Shop-Floor"),
    ("{{values}}", {"a": {"b": 1}}),                       # whole string -> raw value
    ("{{n}}", 3),
    ("{{flag}}", False),
    ("{{none}}", None),
    ("{{url.self}}", "http://git/uuid/c1d2"),               # dotted path
    ("{{list.1}}", "y"),
    ("edge-cluster-{{uuid}}", "edge-cluster-c1d2"),         # interpolation
    ("{{name}}/{{n}}/{{flag}}", "Shop-Floor/3/false"),
    ("x{{none}}y{{missing}}z", "xyz"),                      # null/undefined -> ""
    ("{{missing:fplus-edge}}", "fplus-edge"),               # default
    ("{{name:other}}", "Shop-Floor"),
    ("ns={{missing: edge }}", "ns=edge"),
    ("no placeholders", "no placeholders"),
    ("{single}", "{single}"),
    (7, 7),
    (None, None),
])
def test_values(template: Any, expected: Any) -> None:
    assert render(template, CTX) == expected


def test_undefined_whole_value_drops_key_and_list_item() -> None:
    template = {"keep": "{{name}}", "drop": "{{missing}}", "items": ["{{missing}}", "{{n}}"]}
    assert render(template, CTX) == {"keep": "Shop-Floor", "items": [3]}


def test_keys_are_templated() -> None:
    template = {"{{name}}.yaml": ["{{values}}"], "edge-{{uuid}}": {"{{missing}}": 1}}
    assert render(template, CTX) == {"Shop-Floor.yaml": [{"a": {"b": 1}}], "edge-c1d2": {}}


def test_nested_manifest() -> None:
    template = {"metadata": {"name": "self-link", "namespace": "{{ namespace:fplus-edge }}"},
                "spec": {"url": "{{ url.self }}", "interval": "3m"}}
    assert render(template, CTX) == {
        "metadata": {"name": "self-link", "namespace": "fplus-edge"},
        "spec": {"url": "http://git/uuid/c1d2", "interval": "3m"}}


def test_template_is_not_mutated() -> None:
    template = {"a": ["{{values}}"]}
    out = render(template, CTX)
    out["a"][0]["a"]["b"] = 2
    assert template == {"a": ["{{values}}"]} and CTX["values"] == {"a": {"b": 1}}
