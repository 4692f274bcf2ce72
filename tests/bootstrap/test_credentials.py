"""credentials_manifest: valid Secrets whose values survive YAML whatever they hold."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from fplus import bootstrap
from tests.manifests.meta import meta_errors

kubernetes_validate = pytest.importorskip("kubernetes_validate")

MANAGED_BY = {"app.kubernetes.io/managed-by": "fplus-cluster-manager"}
# Values YAML would read as something else, or break on, if written unquoted.
AWKWARD = ["yes", "no", "null", "~", "123", "0x1F", "1e3", "true", "- a", "a: b", "# x", "---",
           "...", "'q'", '"dq"', "  lead", "trail ", "a\nb", "tab\there", "{x}", "[y]", "&a *b",
           "!tag", "%x", "@x", "`x`", "$x", "é✓", "\\", "x" * 5000, "{{name}}"]


def secret(namespace: str, name: str, username: str, password: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace, "labels": MANAGED_BY},
            "type": "Opaque", "stringData": {"username": username, "password": password}}


def test_two_secrets() -> None:
    text = bootstrap.credentials_manifest("fplus-edge", {
        "flux-secrets": ("op1flux/line-1", "pw1"),
        "edge-sync-credentials": ("op1sync/line-1", "pw2")})
    assert text.startswith("---\napiVersion: v1\nkind: Secret\n")
    assert list(yaml.safe_load_all(text)) == [
        secret("fplus-edge", "flux-secrets", "op1flux/line-1", "pw1"),
        secret("fplus-edge", "edge-sync-credentials", "op1sync/line-1", "pw2")]


def test_a_private_ca_goes_into_every_secret() -> None:
    ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    text = bootstrap.credentials_manifest("fplus-edge", {"flux-secrets": ("u1", "p1"),
                                                         "edge-sync-credentials": ("u2", "p2")},
                                          ca)
    assert [doc["stringData"] for doc in yaml.safe_load_all(text)] == [
        {"username": "u1", "password": "p1", "ca.crt": ca},
        {"username": "u2", "password": "p2", "ca.crt": ca}]
    with pytest.raises(bootstrap.BootstrapError, match="PEM certificate"):
        bootstrap.credentials_manifest("fplus-edge", {"s": ("u", "p")}, "not a certificate")


@pytest.mark.parametrize("value", AWKWARD, ids=repr)
def test_any_value_survives(value: str) -> None:
    text = bootstrap.credentials_manifest("ns", {"s": (value, value)})
    [doc] = yaml.safe_load_all(text)
    assert doc["stringData"] == {"username": value, "password": value}


def test_long_values_stay_on_one_line() -> None:
    text = bootstrap.credentials_manifest("ns", {"s": ("u", "p" * 5000)})
    assert "  password: " + "p" * 5000 + "\n" in text


@pytest.mark.parametrize("version", ["1.30", kubernetes_validate.latest_version()])
def test_secrets_validate_strictly(version: str) -> None:
    text = bootstrap.credentials_manifest("f" * 63, {"a.b-c": ("u", "p"), "x" * 253: ("u", "p")})
    docs = list(yaml.safe_load_all(text))
    assert len(docs) == 2
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)
        assert meta_errors(doc, namespaced=True) == []


@pytest.mark.parametrize("namespace", ["", "Fplus", "a_b", "a.b", "-a", "a-", "f" * 64, None, 1])
def test_namespace_must_be_a_dns1123_label(namespace: Any) -> None:
    with pytest.raises(bootstrap.BootstrapError, match=r"namespace .* is not a DNS-1123 label"):
        bootstrap.credentials_manifest(namespace, {"s": ("u", "p")})


@pytest.mark.parametrize("name", ["", "Flux", "a_b", "-a", "a.", "a..b", "x" * 254, None])
def test_secret_names_must_be_dns1123_subdomains(name: Any) -> None:
    with pytest.raises(bootstrap.BootstrapError, match=r"Secret name .* not a DNS-1123 subdomain"):
        bootstrap.credentials_manifest("ns", {name: ("u", "p")})


@pytest.mark.parametrize("credentials", [("u",), ("u", "p", "x"), ["u", "p"], ("", "p"),
                                         ("u", ""), ("u", 1), (None, "p"), "up"], ids=repr)
def test_credentials_must_be_two_non_empty_strings(credentials: Any) -> None:
    with pytest.raises(bootstrap.BootstrapError, match="Secret s: expected"):
        bootstrap.credentials_manifest("ns", {"s": credentials})


@pytest.mark.parametrize("secrets", [{}, [("s", ("u", "p"))], None])
def test_secrets_must_be_a_non_empty_mapping(secrets: Any) -> None:
    with pytest.raises(bootstrap.BootstrapError, match="non-empty mapping"):
        bootstrap.credentials_manifest("ns", secrets)
