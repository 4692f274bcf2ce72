"""Kubernetes label and selector syntax, and selector matching (fplus.kubenames.labels)."""

from __future__ import annotations

import pytest

from fplus.kubenames.labels import (
    SelectorSyntaxError,
    is_label_key,
    is_label_value,
    labels_errors,
    parse_selector,
    selector_errors,
    selector_matches,
)


@pytest.mark.parametrize("key", ["site", "a", "factoryplus.app.amrc.co.uk/tier", "x_y.z-1",
                                 "A1", "k" * 63])
def test_label_keys_kubernetes_accepts(key: str) -> None:
    assert is_label_key(key)


@pytest.mark.parametrize("key", ["", "-site", "site-", "a/b/c", "Bad_Prefix.com/x", "/x", "x/",
                                 "k" * 64, "s ite", 7])
def test_label_keys_kubernetes_refuses(key: object) -> None:
    assert not is_label_key(key)


def test_label_values_may_be_empty_but_not_long_or_odd() -> None:
    assert is_label_value("") and is_label_value("Line_3.b")
    assert not is_label_value("v" * 64) and not is_label_value("a b")
    assert not is_label_value(3) and not is_label_value("-a")


def test_label_errors_name_each_field() -> None:
    assert labels_errors({"site": "leeds", "tier": ""}) == {}
    errors = labels_errors({"site": "le eds", "-bad": "x"})
    assert set(errors) == {"labels.site", "labels.-bad"}
    assert "label value" in errors["labels.site"] and "label key" in errors["labels.-bad"]
    assert set(labels_errors(["site"])) == {"labels"}


def test_selector_errors_name_each_field() -> None:
    good = {"matchLabels": {"site": "leeds"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]},
                                 {"key": "plc", "operator": "Exists"}]}
    assert selector_errors(good) == {}
    bad = {"matchLabels": {"site": "le eds"}, "other": 1,
           "matchExpressions": [{"key": "tier", "operator": "Is", "values": ["a"]},
                                {"key": "t", "operator": "In", "values": []},
                                {"key": "t", "operator": "Exists", "values": ["a"]}, "x"]}
    assert set(selector_errors(bad)) == {
        "selector", "selector.matchLabels.site", "selector.matchExpressions[0].operator",
        "selector.matchExpressions[1].values", "selector.matchExpressions[2].values",
        "selector.matchExpressions[3]"}
    assert set(selector_errors("site=leeds")) == {"selector"}


LABELS = {"site": "leeds", "tier": "line", "plc": ""}


@pytest.mark.parametrize(("selector", "matches"), [
    ({}, True),
    ({"matchLabels": {"site": "leeds"}}, True),
    ({"matchLabels": {"site": "leeds", "tier": "cell"}}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["cell", "line"]}]}, True),
    ({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["line"]}]}, False),
    ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, True),
    ({"matchExpressions": [{"key": "plc", "operator": "Exists"}]}, True),
    ({"matchExpressions": [{"key": "plc", "operator": "DoesNotExist"}]}, False),
    ({"matchLabels": {"site": "leeds"},
      "matchExpressions": [{"key": "zone", "operator": "Exists"}]}, False),
])
def test_selectors_match_as_in_kubernetes(selector: dict, matches: bool) -> None:
    assert selector_errors(selector) == {}
    assert selector_matches(selector, LABELS) is matches


def test_a_selector_string_parses_into_match_labels_and_expressions() -> None:
    selector = parse_selector("site=leeds, tier!=x,env in (a, b),plc,!legacy,"
                              "zone notin (n1),k==v,site=york")
    assert selector == {
        "matchLabels": {"site": "leeds", "k": "v"},
        "matchExpressions": [
            {"key": "tier", "operator": "NotIn", "values": ["x"]},
            {"key": "env", "operator": "In", "values": ["a", "b"]},
            {"key": "plc", "operator": "Exists"},
            {"key": "legacy", "operator": "DoesNotExist"},
            {"key": "zone", "operator": "NotIn", "values": ["n1"]},
            {"key": "site", "operator": "In", "values": ["york"]}]}
    assert selector_errors(selector) == {}
    assert parse_selector("") == {} == parse_selector("  ")
    assert parse_selector("tier=") == {"matchLabels": {"tier": ""}}
    assert parse_selector("factoryplus.app.amrc.co.uk/tier in (line)") == {"matchExpressions": [
        {"key": "factoryplus.app.amrc.co.uk/tier", "operator": "In", "values": ["line"]}]}


@pytest.mark.parametrize(("labels", "matched"), [
    ({"site": "leeds", "env": "a", "plc": ""}, True),
    ({"site": "leeds", "env": "c", "plc": ""}, False),
    ({"site": "leeds", "env": "a", "plc": "", "tier": "x"}, False),
    ({"site": "leeds", "env": "b", "plc": "", "tier": "y"}, True),
    ({"site": "leeds", "env": "a"}, False),
    ({"site": "leeds", "env": "a", "plc": "", "legacy": "1"}, False),
    ({"site": "york", "env": "a", "plc": ""}, False),
])
def test_a_parsed_selector_matches_as_kubernetes_does(labels: dict[str, str],
                                                     matched: bool) -> None:
    selector = parse_selector("site=leeds,tier!=x,env in (a,b),plc,!legacy")
    assert selector_matches(selector, labels) is matched


@pytest.mark.parametrize(("text", "words"), [
    ("site=leeds,", "empty requirement"),
    (",site", "empty requirement"),
    ("site=le eds", "not a requirement"),
    ("env in (a,b", "not a requirement"),
    ("env in ()", "at least one value"),
    ("env in (a,b c)", "not a label value"),
    ("count>3", "not a requirement"),
    ("-site=x", "not a label key"),
    ("!site=x", "not a requirement"),
    ("a=b=c", "not a requirement"),
])
def test_malformed_selector_strings_are_refused_naming_the_part(text: str,
                                                                words: str) -> None:
    with pytest.raises(SelectorSyntaxError, match=words):
        parse_selector(text)
