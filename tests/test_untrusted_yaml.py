"""The loader of YAML from users: what aliases may add, and what is refused before building."""

from __future__ import annotations

import pytest
import yaml

from fplus.templating import untrusted_yaml
from fplus.templating.untrusted_yaml import ALIAS_BUDGET, MAX_DEPTH, YAMLRefused


def test_plain_yaml_merge_keys_and_several_documents_load() -> None:
    assert untrusted_yaml.load("") is None
    assert untrusted_yaml.load(b"a: 1\n") == {"a": 1}
    assert untrusted_yaml.load("base: &b {x: 1}\nweb:\n  <<: *b\n  y: 2\n") == {
        "base": {"x": 1}, "web": {"x": 1, "y": 2}}
    assert untrusted_yaml.load_all("---\na: 1\n---\n---\nb: &x [1]\nc: *x\n") == [
        {"a": 1}, {"b": [1], "c": [1]}]


def test_aliases_are_counted_expanded_up_to_the_budget() -> None:
    scalar = "x" * 999  # 1,000 with its node
    fits = f"a: &a {scalar}\nb: [{', '.join(['*a'] * (ALIAS_BUDGET // 1000))}]\n"
    assert len(untrusted_yaml.load(fits)["b"]) == ALIAS_BUDGET // 1000
    with pytest.raises(YAMLRefused, match="alias bomb"):
        untrusted_yaml.load(fits.replace("]\n", ", *a]\n"))


@pytest.mark.parametrize(("text", "reason"), [
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nests deeper"),
    ("a: &x {b: *x}\n", "inside its own anchor"),
    ("a: &a [1, 2]\n---\nb: &b [*a]\n", None),  # an alias of another document: YAML's error
])
def test_refusals_are_yaml_errors_with_one_line(text: str, reason: str | None) -> None:
    with pytest.raises(yaml.YAMLError) as caught:
        untrusted_yaml.load_all(text)
    if reason is not None:
        assert isinstance(caught.value, YAMLRefused) and reason in str(caught.value)
        assert "\n" not in str(caught.value)
    assert untrusted_yaml.load("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
