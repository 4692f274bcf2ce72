"""Which Edge cluster configuration entries the Cluster Manager will commission."""

from __future__ import annotations

from typing import Any

import pytest

from fplus.cluster_manager.changes.rendering import repo_content
from fplus.cluster_manager.model.cluster_config import (
    InvalidConfig,
    check_config,
    patched_config,
)

GOOD = {"name": "line-1", "namespace": "fplus-edge"}


@pytest.mark.parametrize("config", [
    GOOD,
    GOOD | {"bare": True, "values": {"a": 1}},
    GOOD | {"sealedSecrets": False},
    GOOD | {"fluxVersion": "v2.7.5"},
    GOOD | {"chart": "0badc0de-0000-4000-8000-000000000000"},
    GOOD | {"labels": {"site": "leeds", "factoryplus.app.amrc.co.uk/tier": ""}},
    {"name": "a" * 63, "namespace": "n"},
])
def test_accepted(config: dict[str, Any]) -> None:
    assert check_config(config) == config


@pytest.mark.parametrize(("config", "words"), [
    ([], "JSON object"),
    ({"namespace": "x"}, "name"),
    (GOOD | {"name": "Shop-Floor"}, "DNS-1123"),
    (GOOD | {"name": "line-1\n"}, "DNS-1123"),
    (GOOD | {"name": "../x"}, "DNS-1123"),
    (GOOD | {"name": "a+b"}, "DNS-1123"),
    (GOOD | {"name": "a" * 64}, "DNS-1123"),
    (GOOD | {"name": ""}, "DNS-1123"),
    (GOOD | {"namespace": "kube_system"}, "namespace"),
    (GOOD | {"chart": "not-a-uuid"}, "chart"),
    (GOOD | {"bare": "yes"}, "bare"),
    (GOOD | {"sealedSecrets": 0}, "sealedSecrets"),
    (GOOD | {"fluxVersion": "2.7.5"}, "fluxVersion"),
    (GOOD | {"fluxVersion": "v2.7.5/../x"}, "fluxVersion"),
    (GOOD | {"values": []}, "values"),
    (GOOD | {"colour": "blue"}, "unknown keys"),
    (GOOD | {"labels": {"site": "le eds"}}, "label value"),
    (GOOD | {"labels": {"-site": "leeds"}}, "label key"),
    (GOOD | {"labels": ["site"]}, "labels must be an object"),
])
def test_refused(config: Any, words: str) -> None:
    with pytest.raises(InvalidConfig, match=words):
        check_config(config)


@pytest.mark.parametrize("key", ["../escape.yaml", "sub/dir.yaml", "x.txt", ".hidden.yaml"])
def test_template_file_names_are_plain(key: str) -> None:
    template = {"self-link.yaml": [{"kind": "A"}], key: [{"kind": "B"}]}
    with pytest.raises(ValueError, match=r"plain \.yaml file name"):
        repo_content(template, {})


def test_a_patch_merges_and_leaves_the_current_entry_alone() -> None:
    current = GOOD | {"labels": {"site": "leeds", "old": "x"}, "values": {"a": {"b": 1}}}
    patched = patched_config(current, {"labels": {"old": None, "tier": "line"},
                                       "values": {"a": {"c": 2}}, "name": "line-1"})
    assert patched == GOOD | {"labels": {"site": "leeds", "tier": "line"},
                              "values": {"a": {"b": 1, "c": 2}}}
    assert current["labels"] == {"site": "leeds", "old": "x"}
    assert current["values"] == {"a": {"b": 1}}


@pytest.mark.parametrize(("patch", "field", "words"), [
    ({"name": "line-2"}, "name", "principals"),
    ({"namespace": "other"}, "namespace", "fixed"),
    ({"bare": True}, "bare", "fixed"),
    ({"colour": "blue"}, "colour", "only values"),
    ({"labels": {"site": "a b"}}, "labels.site", "label value"),
    ({"fluxVersion": "2"}, "fluxVersion", "Flux version"),
    (["labels"], "", "JSON object"),
])
def test_a_refused_patch_names_its_field(patch: Any, field: str, words: str) -> None:
    with pytest.raises(InvalidConfig, match=words) as refused:
        patched_config(GOOD, patch)
    assert refused.value.field == field and str(refused.value).startswith(field)
