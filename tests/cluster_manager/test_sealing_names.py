"""Namespace, secret name and key validation, and the scope table (labels and annotations)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

pytest.importorskip("cryptography", reason="fplus.cluster_manager.sealing needs `cryptography`")

from fplus.cluster_manager.sealing import (
    CLUSTER_WIDE_ANNOTATION,
    NAMESPACE_WIDE_ANNOTATION,
    InvalidName,
    ScopeError,
    encryption_label,
    parse_scope,
    scope_annotations,
    secret_path,
    validate_key,
    validate_name,
    validate_namespace,
)
from fplus.cluster_manager.sealing.scope import (
    scope_from_annotations,
    with_scope_annotations,
)

Validator = Callable[[object], str]

# refused by every validator: path escapes, separators, empty, too long, dot names, spaces
REFUSED_BY_ALL = ["../x", "a/b", "", "a" * 254, ".", "..", "a b", "a\n", "a\x00", "ä", "a\\b",
                  "/abs", "x/../y"]
NAMESPACE_OK = ["fplus-edge", "a", "0", "kube-system", "a" * 63, "1-2-3"]
NAMESPACE_BAD = ["Upper", "a" * 64, "a.b", "-a", "a-", "a_b", "fplus_edge"]
NAME_OK = ["password", "tls.crt", "mqtt-creds", "edge-agent-sensitive-information-"
           "0b6d6e2c-8f3e-4d4b-9a57-3c1f2e5b7d90", "a.b.c", "a" * 250, "0.1"]
NAME_BAD = ["Upper", "my-key_1", "a" * 251, "a..b", ".a", "a.", "-a", "a-", "a.-b", "UPPER.case"]
KEY_OK = ["tls.crt", "password", "my-key_1", "Password", "UPPER", ".dotfile", "a..b", "a.",
          "__FPSI__r4nd0m", "-", "_", "a" * 253, "ca.crt"]
KEY_BAD = ["..a", "...", "a:b", "a=b", "a+b", "a@b", "a\tb"]

CASES: list[tuple[str, Validator, str, bool]] = (
    [("namespace", validate_namespace, v, False) for v in REFUSED_BY_ALL + NAMESPACE_BAD]
    + [("namespace", validate_namespace, v, True) for v in NAMESPACE_OK]
    + [("name", validate_name, v, False) for v in REFUSED_BY_ALL + NAME_BAD]
    + [("name", validate_name, v, True) for v in NAME_OK]
    + [("key", validate_key, v, False) for v in REFUSED_BY_ALL + KEY_BAD]
    + [("key", validate_key, v, True) for v in KEY_OK]
)


@pytest.mark.parametrize(("kind", "validate", "value", "ok"), CASES,
                         ids=[f"{c[0]}-{'ok' if c[3] else 'bad'}-{c[2][:20]!r}" for c in CASES])
def test_validation_table(kind: str, validate: Validator, value: str, ok: bool) -> None:
    if ok:
        assert validate(value) == value
    else:
        with pytest.raises(InvalidName) as caught:
            validate(value)
        message = str(caught.value)
        assert kind in message
        assert len(message) < 400  # long input is shortened, not echoed whole


@pytest.mark.parametrize("validate", [validate_namespace, validate_name, validate_key])
@pytest.mark.parametrize("value", [None, 5, b"bytes", ["a"]])
def test_non_strings_are_refused(validate: Validator, value: object) -> None:
    with pytest.raises(InvalidName, match=type(value).__name__):
        validate(value)


def test_messages_explain_the_rule() -> None:
    with pytest.raises(InvalidName, match=r"DNS-1123 label.*at most 63"):
        validate_namespace("Upper")
    with pytest.raises(InvalidName, match=r"DNS-1123 subdomain.*at most 250"):
        validate_name("a/b")
    with pytest.raises(InvalidName, match=r"letters, digits, '-', '_' and '\.'"):
        validate_key("a/b")
    with pytest.raises(InvalidName, match=re.escape("must not be '.' or '..' or start with '..'")):
        validate_key("..")
    with pytest.raises(InvalidName, match="an empty string"):
        validate_name("")
    with pytest.raises(InvalidName, match=r"\(254 characters\)"):
        validate_name("a" * 254)


@pytest.mark.parametrize(("namespace", "name", "path"), [
    ("fplus-edge", "mqtt-creds", "edo/secrets/fplus-edge/mqtt-creds.yaml"),
    ("ns", "tls.crt", "edo/secrets/ns/tls.crt.yaml"),
    ("ns", "a" * 250, f"edo/secrets/ns/{'a' * 250}.yaml"),
])
def test_secret_path(namespace: str, name: str, path: str) -> None:
    assert secret_path(namespace, name) == path
    assert len(path.rsplit("/", 1)[1]) <= 255


@pytest.mark.parametrize(("namespace", "name"), [
    ("..", "x"), ("ns", ".."), ("ns", "../../etc/passwd"), ("a/b", "x"), ("ns", ""), ("", "x"),
])
def test_secret_path_refuses_escapes(namespace: str, name: str) -> None:
    with pytest.raises(InvalidName):
        secret_path(namespace, name)


@pytest.mark.parametrize(("given", "scope"), [
    (None, "strict"), ("", "strict"), ("strict", "strict"),
    ("namespace-wide", "namespace-wide"), ("cluster-wide", "cluster-wide"),
])
def test_parse_scope(given: str | None, scope: str) -> None:
    assert parse_scope(given) == scope


@pytest.mark.parametrize("given", ["Strict", "namespace", "cluster", "cluster_wide", " strict",
                                   "0", "x" * 1000])
def test_unknown_scopes(given: str) -> None:
    with pytest.raises(ScopeError, match="strict, namespace-wide, cluster-wide") as caught:
        parse_scope(given)
    assert len(str(caught.value)) < 200


# sealed-secrets' TestEncryptionLabel: "myns/myname", "myns", ""
@pytest.mark.parametrize(("scope", "label", "annotations"), [
    ("strict", b"myns/myname", {}),
    ("namespace-wide", b"myns", {NAMESPACE_WIDE_ANNOTATION: "true"}),
    ("cluster-wide", b"", {CLUSTER_WIDE_ANNOTATION: "true"}),
])
def test_scope_table(scope: str, label: bytes, annotations: dict[str, str]) -> None:
    assert encryption_label(scope, "myns", "myname") == label
    assert scope_annotations(scope) == annotations
    assert scope_from_annotations(annotations) == scope
    assert NAMESPACE_WIDE_ANNOTATION == "sealedsecrets.bitnami.com/namespace-wide"
    assert CLUSTER_WIDE_ANNOTATION == "sealedsecrets.bitnami.com/cluster-wide"


def test_labels_validate_only_what_they_use() -> None:
    assert encryption_label("cluster-wide", "", "") == b""
    assert encryption_label("namespace-wide", "ns", "") == b"ns"
    with pytest.raises(InvalidName):
        encryption_label("strict", "ns", "")
    with pytest.raises(InvalidName):
        encryption_label("namespace-wide", "", "name")


@pytest.mark.parametrize(("annotations", "scope"), [
    (None, "strict"),
    ({}, "strict"),
    ({"other": "x"}, "strict"),
    ({NAMESPACE_WIDE_ANNOTATION: "true"}, "namespace-wide"),
    ({CLUSTER_WIDE_ANNOTATION: "true"}, "cluster-wide"),
    ({CLUSTER_WIDE_ANNOTATION: "true", NAMESPACE_WIDE_ANNOTATION: "true"}, "cluster-wide"),
    ({CLUSTER_WIDE_ANNOTATION: "True"}, "strict"),  # only exactly "true" counts
    ({CLUSTER_WIDE_ANNOTATION: True}, "strict"),
    ({CLUSTER_WIDE_ANNOTATION: "false", NAMESPACE_WIDE_ANNOTATION: "true"}, "namespace-wide"),
    ("not a map", "strict"),
])
def test_scope_detection_like_the_controller(annotations: object, scope: str) -> None:
    assert scope_from_annotations(annotations) == scope  # type: ignore[arg-type]


def test_with_scope_annotations_replaces_only_scope_annotations() -> None:
    given = {"a": "1", CLUSTER_WIDE_ANNOTATION: "true", "b": "2"}
    assert with_scope_annotations(given, "namespace-wide") == \
        {"a": "1", "b": "2", NAMESPACE_WIDE_ANNOTATION: "true"}
    assert with_scope_annotations(given, "strict") == {"a": "1", "b": "2"}
    assert with_scope_annotations(None, "cluster-wide") == {CLUSTER_WIDE_ANNOTATION: "true"}
    assert given == {"a": "1", CLUSTER_WIDE_ANNOTATION: "true", "b": "2"}  # not modified
