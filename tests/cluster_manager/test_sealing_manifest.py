"""The SealedSecret document: shape per scope, CRD schema validity, merging and removing keys."""

from __future__ import annotations

import base64
import copy
from functools import cache
from typing import Any

import jsonschema
import pytest
import yaml

pytest.importorskip("cryptography", reason="fplus.cluster_manager.sealing needs `cryptography`")

from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.cluster_manager.formats.manifest_yaml import load_documents, render_documents
from fplus.cluster_manager.sealing import (
    InvalidCiphertext,
    InvalidName,
    ManifestError,
    ScopeConflict,
    ScopeError,
    decrypt_value,
    encrypt_value,
    manifest_scope,
    merge_key,
    remove_key,
    sealed_keys,
    sealed_secret,
)
from tests.shared_files import CRDS, need

CRD = CRDS / "bitnami.com_sealedsecrets.yaml"
NS, NAME = "fplus-edge", "mqtt-creds"
NSW = {"sealedsecrets.bitnami.com/namespace-wide": "true"}
CW = {"sealedsecrets.bitnami.com/cluster-wide": "true"}


def fake(tag: str) -> str:
    """A stand-in ciphertext: standard base64 that is unique per tag."""
    return base64.b64encode(b"\x02\x00" + tag.encode() * 8).decode()


A, B, C = fake("a"), fake("b"), fake("c")


def _openapi_to_jsonschema(node: Any) -> Any:
    """OpenAPI v3 ``nullable: true`` → JSON Schema ``type: [t, "null"]``; the rest as is."""
    if isinstance(node, list):
        return [_openapi_to_jsonschema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _openapi_to_jsonschema(value) for key, value in node.items()}
    if out.pop("nullable", False) and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


@cache
def _validator() -> jsonschema.Validator:
    crd = yaml.safe_load(need(CRD).read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    schema = _openapi_to_jsonschema(version["schema"]["openAPIV3Schema"])
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def assert_valid(doc: dict[str, Any]) -> None:
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]
    assert (doc["apiVersion"], doc["kind"]) == ("bitnami.com/v1alpha1", "SealedSecret")


def test_the_schema_check_has_teeth() -> None:
    good = sealed_secret(NS, NAME, {"k": A})
    assert_valid(good)
    for broken in ({"spec": {}}, {"spec": {"encryptedData": {"k": 1}}},
                   {"spec": {"encryptedData": {}, "template": {"type": 5}}}):
        doc = copy.deepcopy(good) | broken
        assert list(_validator().iter_errors(doc)), broken
    assert list(_validator().iter_errors({k: v for k, v in good.items() if k != "spec"}))


@pytest.mark.parametrize(("scope", "annotations"), [
    (None, None), ("strict", None), ("namespace-wide", NSW), ("cluster-wide", CW),
])
def test_new_sealed_secret_per_scope(scope: str | None, annotations: dict[str, str] | None) -> None:
    doc = sealed_secret(NS, NAME, {"password": A, "username": B}, scope)
    meta = {"name": NAME, "namespace": NS} | ({"annotations": annotations} if annotations else {})
    assert doc == {
        "apiVersion": "bitnami.com/v1alpha1",
        "kind": "SealedSecret",
        "metadata": meta,
        "spec": {
            "encryptedData": {"password": A, "username": B},
            "template": {"metadata": meta, "type": "Opaque"},
        },
    }
    assert_valid(doc)
    assert manifest_scope(doc) == (scope or "strict")
    # the controller reads the scope from the object's own metadata; the template carries it too
    assert ("annotations" in doc["metadata"]) == (annotations is not None)
    assert doc["metadata"] is not doc["spec"]["template"]["metadata"]


@pytest.mark.parametrize("scope", ["strict", "namespace-wide", "cluster-wide"])
def test_rendered_yaml_has_no_aliases_and_loads_back(scope: str) -> None:
    doc = merge_key(merge_key(None, NS, NAME, "b", B, scope), NS, NAME, "a", A, scope)
    text = render_documents([doc])
    assert "&id" not in text and "*id" not in text
    assert load_documents(text) == [doc]
    assert list(doc["spec"]["encryptedData"]) == ["a", "b"]  # sorted, as kubeseal emits


def test_empty_encrypted_data_is_valid() -> None:
    doc = sealed_secret(NS, NAME, {})
    assert doc["spec"]["encryptedData"] == {}
    assert_valid(doc)


@pytest.mark.parametrize(("encrypted", "error"), [
    ({"../x": A}, InvalidName),
    ({"a/b": A}, InvalidName),
    ({"k": "not base64!"}, InvalidCiphertext),
    ({"k": A.replace("+", "-").replace("/", "_") + "-"}, InvalidCiphertext),
    ({"k": ""}, InvalidCiphertext),
    ({"k": 5}, InvalidCiphertext),
    ({"k": A.rstrip("=") + "x"}, InvalidCiphertext),
])
def test_sealed_secret_refuses_bad_entries(encrypted: dict[str, Any],
                                           error: type[Exception]) -> None:
    with pytest.raises(error):
        sealed_secret(NS, NAME, encrypted)


@pytest.mark.parametrize(("namespace", "name", "scope", "error"), [
    ("../x", NAME, "strict", InvalidName),
    (NS, "a/b", "strict", InvalidName),
    ("Upper", NAME, "cluster-wide", InvalidName),  # the file path needs both, whatever the scope
    (NS, NAME, "bogus", ScopeError),
])
def test_sealed_secret_refuses_bad_names_and_scope(namespace: str, name: str, scope: str,
                                                   error: type[Exception]) -> None:
    with pytest.raises(error):
        sealed_secret(namespace, name, {"k": A}, scope)


def test_merge_into_nothing_creates_the_document() -> None:
    assert merge_key(None, NS, NAME, "k", A, "namespace-wide") == \
        sealed_secret(NS, NAME, {"k": A}, "namespace-wide")


def test_merge_keeps_other_keys_and_replaces_its_own() -> None:
    first = merge_key(None, NS, NAME, "password", A)
    snapshot = copy.deepcopy(first)
    second = merge_key(first, NS, NAME, "username", B)
    assert first == snapshot  # arguments are never modified
    assert second["spec"]["encryptedData"] == {"password": A, "username": B}
    third = merge_key(second, NS, NAME, "password", C)
    assert third["spec"]["encryptedData"] == {"password": C, "username": B}
    assert third["metadata"] == first["metadata"]
    assert third["spec"]["template"] == first["spec"]["template"]
    assert_valid(third)


def acs_document() -> dict[str, Any]:
    """A file as ACS writes it (§3.7): namespace first, ``template.data: null``."""
    return yaml.safe_load(f"""
apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
metadata: {{namespace: {NS}, name: {NAME}}}
spec:
  encryptedData: {{zeta: {A}, alpha: {B}}}
  template: {{data: null, metadata: {{namespace: {NS}, name: {NAME}, labels: {{app: x}}}},
              type: Opaque}}
""")


def test_merge_into_an_acs_document_keeps_everything_else() -> None:
    merged = merge_key(acs_document(), NS, NAME, "middle", C)
    expected = acs_document()
    expected["spec"]["encryptedData"] = {"alpha": B, "middle": C, "zeta": A}
    assert merged == expected
    assert merged["spec"]["template"]["data"] is None
    assert_valid(merged)  # nullable template.data is valid


def test_merge_into_a_document_without_encrypted_data() -> None:
    doc = acs_document()
    doc["spec"]["encryptedData"] = None
    assert merge_key(doc, NS, NAME, "k", A)["spec"]["encryptedData"] == {"k": A}
    del doc["spec"]["encryptedData"]
    assert merge_key(doc, NS, NAME, "k", A)["spec"]["encryptedData"] == {"k": A}


def _with(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node = doc
    for part in parents:
        node = node[part]
    node[last] = value
    return doc


MISFITS = [
    ("other namespace", lambda d: _with(d, "metadata.namespace", "other"), "other/mqtt-creds"),
    ("other name", lambda d: _with(d, "metadata.name", "other"), "fplus-edge/other"),
    ("no namespace", lambda d: _with(d, "metadata", {"name": NAME}), "None/mqtt-creds"),
    ("a Secret", lambda d: _with(d, "kind", "Secret"), "not bitnami.com/v1alpha1 SealedSecret"),
    ("other version", lambda d: _with(d, "apiVersion", "bitnami.com/v2"), "not bitnami.com"),
    ("no metadata", lambda d: _with(d, "metadata", None), "no metadata"),
    ("no spec", lambda d: _with(d, "spec", "x"), "no spec"),
    ("v1 data", lambda d: _with(d, "spec.data", "AAAA"), "deprecated"),
    ("list data", lambda d: _with(d, "spec.encryptedData", ["a"]), "not a map of strings"),
    ("int value", lambda d: _with(d, "spec.encryptedData", {"a": 1}), "not a map of strings"),
    ("not a map", lambda d: ["a list"], "not a SealedSecret object"),
]


@pytest.mark.parametrize(("case", "spoil", "words"), MISFITS, ids=[m[0] for m in MISFITS])
def test_merge_refuses_a_document_that_does_not_fit(case: str, spoil: Any, words: str) -> None:
    with pytest.raises(ManifestError) as caught:
        merge_key(spoil(acs_document()), NS, NAME, "k", C)
    assert words in str(caught.value)


def test_merge_refuses_bad_arguments() -> None:
    doc = acs_document()
    with pytest.raises(InvalidName):
        merge_key(doc, NS, NAME, "../x", C)
    with pytest.raises(InvalidName):
        merge_key(doc, NS, "Other", "k", C)
    with pytest.raises(InvalidCiphertext):
        merge_key(doc, NS, NAME, "k", "plain text, not sealed")
    with pytest.raises(ScopeError):
        merge_key(doc, NS, NAME, "k", C, "global")
    assert doc == acs_document()


def test_keys_of_different_scopes_cannot_share_a_document() -> None:
    strict = merge_key(None, NS, NAME, "a", A)
    with pytest.raises(ScopeConflict, match=r"holds keys sealed strict \(a\).*seal it strict"):
        merge_key(strict, NS, NAME, "b", B, "cluster-wide")
    wide = merge_key(None, NS, NAME, "a", A, "namespace-wide")
    with pytest.raises(ScopeConflict, match="namespace-wide"):
        merge_key(wide, NS, NAME, "b", B)  # default strict
    assert isinstance(ScopeConflict("x"), ManifestError)


def test_rescoping_is_allowed_when_no_other_key_is_affected() -> None:
    doc = merge_key(None, NS, NAME, "a", A)
    doc["metadata"]["annotations"] = {"keep": "me"}
    doc["spec"]["template"]["metadata"]["annotations"] = {"keep": "me"}
    wide = merge_key(doc, NS, NAME, "a", B, "cluster-wide")  # replaces the only key
    assert wide["metadata"]["annotations"] == {"keep": "me"} | CW
    assert wide["spec"]["template"]["metadata"]["annotations"] == {"keep": "me"} | CW
    assert manifest_scope(wide) == "cluster-wide"
    back = merge_key(wide, NS, NAME, "a", C, "strict")
    assert back["metadata"]["annotations"] == {"keep": "me"}
    empty = remove_key(merge_key(None, NS, NAME, "x", A, "namespace-wide"), "x")
    assert empty is None
    plain = merge_key(None, NS, NAME, "a", A, "namespace-wide")
    plain["spec"]["encryptedData"] = {}
    strict = merge_key(plain, NS, NAME, "b", B)
    assert "annotations" not in strict["metadata"]
    assert "annotations" not in strict["spec"]["template"]["metadata"]
    assert_valid(strict)


def test_remove_key() -> None:
    doc = merge_key(merge_key(None, NS, NAME, "a", A), NS, NAME, "b", B)
    snapshot = copy.deepcopy(doc)
    left = remove_key(doc, "a")
    assert doc == snapshot
    assert left is not None and left["spec"]["encryptedData"] == {"b": B}
    assert left["metadata"] == doc["metadata"]
    assert_valid(left)
    assert remove_key(left, "b") is None  # nothing left: delete the file
    assert remove_key(doc, "absent") == doc  # removing an absent key is not an error
    assert remove_key(None, "a") is None
    assert remove_key(sealed_secret(NS, NAME, {}), "a") is None
    acs = remove_key(acs_document(), "zeta")
    assert acs is not None and acs["spec"]["template"]["data"] is None


@pytest.mark.parametrize(("existing", "key", "error"), [
    (None, "../x", InvalidName),
    ({"kind": "Secret"}, "a", ManifestError),
    ("text", "a", ManifestError),
])
def test_remove_key_refuses(existing: Any, key: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        remove_key(existing, key)


def test_sealed_keys_lists_names_only() -> None:
    assert sealed_keys(None) == []
    assert sealed_keys(acs_document()) == ["alpha", "zeta"]


def test_end_to_end_unseal_like_the_controller() -> None:
    """Keys merged one by one decrypt with the label computed from the document's own metadata,
    as the controller does (namespace, name, scope annotations)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for scope in ("strict", "namespace-wide", "cluster-wide"):
        doc = None
        values = {"password": b"hunter2", "tls.crt": b"-----BEGIN...", "empty": b""}
        for name, value in values.items():
            doc = merge_key(doc, NS, NAME, name,
                            encrypt_value(key.public_key(), value, scope, NS, NAME), scope)
        assert doc is not None
        assert_valid(doc)
        meta = doc["metadata"]
        own_scope = manifest_scope(doc)
        assert own_scope == scope
        unsealed = {k: decrypt_value(key, v, own_scope, meta["namespace"], meta["name"])
                    for k, v in doc["spec"]["encryptedData"].items()}
        assert unsealed == values
