"""The validators the manifest tests rely on do reject what the API server would reject."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from tests.manifests.crds import (
    CEL_RULES,
    SHARED_CRDS,
    CustomResource,
    cel_rules_in,
    norm_rule,
    to_json_schema,
)
from tests.manifests.meta import meta_errors
from tests.shared_files import need

META = {"name": "x", "namespace": "fplus-edge"}

GOOD: dict[str, dict[str, Any]] = {
    "GitRepository": {
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository", "metadata": META,
        "spec": {"interval": "1m", "url": "https://git.example/repo", "ref": {"branch": "main"}}},
    "Kustomization": {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": META,
        "spec": {"interval": "10m", "prune": True, "path": "./",
                 "sourceRef": {"kind": "GitRepository", "name": "x"}}},
    "HelmRepository": {
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository", "metadata": META,
        "spec": {"url": "https://charts.example"}},
    "HelmRelease": {
        "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": META,
        "spec": {"interval": "5m", "values": {"any": {"thing": [1]}},
                 "chart": {"spec": {"chart": "c", "sourceRef": {"kind": "HelmRepository",
                                                                "name": "r"}}}}},
    "SealedSecret": {
        "apiVersion": "bitnami.com/v1alpha1", "kind": "SealedSecret", "metadata": META,
        "spec": {"encryptedData": {"password": "AgBy3i4OJSWK+PiTySYZZA=="},
                 "template": {"metadata": None, "type": "Opaque"}}},
}


def _set(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``doc`` with dotted ``path`` set to ``value`` (``...`` deletes it)."""
    out = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node = out
    for part in parents:
        node = node[part]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return out


BAD = [
    ("GitRepository", "spec.interval", "1 minute", "does not match"),
    ("GitRepository", "spec.interval", "1d", "does not match"),
    ("GitRepository", "spec.url", "git@host:org/repo", "does not match"),
    ("GitRepository", "spec.url", ..., "'url' is a required property"),
    ("GitRepository", "spec.intervall", "1m", "Additional properties"),
    ("GitRepository", "spec.serviceAccountName", "sa", "serviceAccountName can only be set"),
    ("GitRepository", "kindd", "x", "Additional properties"),
    ("Kustomization", "spec.prune", ..., "'prune' is a required property"),
    ("Kustomization", "spec.prune", "true", "is not of type 'boolean'"),
    ("Kustomization", "spec.sourceRef.kind", "HelmRepository", "is not one of"),
    ("HelmRepository", "spec.url", "ftp://charts", "does not match"),
    ("HelmRelease", "spec.chartRef", {"kind": "OCIRepository", "name": "o"},
     "either chart or chartRef must be set"),
    ("HelmRelease", "spec.chart", ..., "either chart or chartRef must be set"),
    ("HelmRelease", "spec.chart.spec.sourceRef.kind", "OCIRepository", "is not one of"),
    ("HelmRelease", "spec.chart.spec.sourceRef.name", ..., "'name' is a required property"),
    ("HelmRelease", "spec.install", {"createNamespace": "yes"}, "is not of type 'boolean'"),
    ("HelmRelease", "spec.releaseName", "r" * 54, "is too long"),
    ("SealedSecret", "spec.encryptedData", ..., "'encryptedData' is a required property"),
    ("SealedSecret", "spec.encryptedData", {"k": 1}, "is not of type 'string'"),
    ("SealedSecret", "spec.data", "not base64!", "is not a 'byte'"),
]


@pytest.mark.parametrize("kind", sorted(GOOD))
def test_good_objects_pass(kind: str, crds: dict[tuple[str, str], CustomResource]) -> None:
    doc = GOOD[kind]
    assert crds[doc["apiVersion"], kind].errors(doc) == []


@pytest.mark.parametrize(("kind", "path", "value", "message"), BAD,
                         ids=[f"{k}:{p}={v!r}"[:60] for k, p, v, _ in BAD])
def test_bad_objects_fail(kind: str, path: str, value: Any, message: str,
                          crds: dict[tuple[str, str], CustomResource]) -> None:
    doc = _set(GOOD[kind], path, value)
    errors = crds[doc["apiVersion"], kind].errors(doc)
    assert any(message in e for e in errors), errors


EDGE_GROUPS = ("source.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io",
               "helm.toolkit.fluxcd.io", "bitnami.com")
"""The API groups of what the edge bundle holds (the CRD folder holds others too, e.g. the
central stack's PostgreSQL operator)."""


def edge_group(api_version: str) -> bool:
    return api_version.split("/")[0] in EDGE_GROUPS


def test_only_ga_flux_versions_are_served(crds: dict[tuple[str, str], CustomResource]) -> None:
    assert {k for k in crds if edge_group(k[0])} == {
        ("source.toolkit.fluxcd.io/v1", "GitRepository"),
        ("source.toolkit.fluxcd.io/v1", "HelmRepository"),
        ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
        ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
        ("bitnami.com/v1alpha1", "SealedSecret")}


def test_every_cel_rule_in_the_edge_crds_has_a_python_equivalent() -> None:
    rules = {norm_rule(rule) for path in need(SHARED_CRDS).glob("*.yaml")
             for crd in yaml.safe_load_all(path.read_text(encoding="utf-8"))
             if crd and crd.get("spec", {}).get("group") in EDGE_GROUPS
             for rule in cel_rules_in(crd)}
    assert rules
    assert rules <= set(CEL_RULES)


def test_unknown_cel_rule_is_an_error_not_a_pass() -> None:
    schema = to_json_schema({"type": "object", "x-kubernetes-validations": [
        {"rule": "self.size() > 1000", "message": "m"}]})
    crd = CustomResource("g/v1", "K", "ks", True, schema)
    assert any("not implemented" in e for e in crd.errors({}))


@pytest.mark.parametrize(("openapi", "json_schema"), [
    ({"type": "string", "nullable": True}, {"type": ["string", "null"]}),
    ({"type": "string", "enum": ["a"], "nullable": True},
     {"type": ["string", "null"], "enum": ["a", None]}),
    ({"x-kubernetes-int-or-string": True, "pattern": "^[0-9]+%?$"},
     {"pattern": "^[0-9]+%?$", "anyOf": [{"type": "integer"}, {"type": "string"}]}),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True},
     {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
    ({"type": "object", "properties": {"a": {"type": "string", "description": "d"}}},
     {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}),
    ({"type": "object", "x-kubernetes-preserve-unknown-fields": True}, {"type": "object"}),
    ({"type": "object", "additionalProperties": {"type": "string"}},
     {"type": "object", "additionalProperties": {"type": "string"}}),
    ({"type": "array", "items": {"type": "object", "properties": {"default": {"type": "string"}}},
      "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["default"]},
     {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["default"],
      "items": {"type": "object", "properties": {"default": {"type": "string"}},
                "additionalProperties": False}}),
])
def test_openapi_to_json_schema(openapi: dict[str, Any], json_schema: dict[str, Any]) -> None:
    assert to_json_schema(openapi, _root=False) == json_schema


@pytest.mark.parametrize(("schema", "value", "ok"), [
    ({"x-kubernetes-int-or-string": True}, 3, True),
    ({"x-kubernetes-int-or-string": True}, "25%", True),
    ({"x-kubernetes-int-or-string": True}, 2.5, False),
    ({"x-kubernetes-int-or-string": True}, None, False),
    ({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
     ["a", "a"], False),
    ({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
      "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
     [{"name": "a", "v": 1}, {"name": "a", "v": 2}], False),
    ({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
      "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
     [{"name": "a"}, {"name": "b"}], True),
    ({"type": "integer", "format": "int32"}, 2**31, False),
    ({"type": "integer", "format": "int64"}, 2**40, True),
])
def test_converted_keywords(schema: dict[str, Any], value: Any, ok: bool) -> None:
    crd = CustomResource("g/v1", "K", "ks", True, to_json_schema(schema, _root=False))
    assert (crd.errors(value) == []) is ok


@pytest.mark.parametrize(("doc", "namespaced", "problem"), [
    ({"kind": "ConfigMap", "metadata": {"name": "Cluster-Config", "namespace": "n"}}, True,
     "metadata.name"),
    ({"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a.b"}}, True,
     "metadata.namespace"),
    ({"kind": "ConfigMap", "metadata": {"name": "c"}}, True, "metadata.namespace"),
    ({"kind": "ClusterRole", "metadata": {"name": "c", "namespace": "n"}}, False,
     "cluster-scoped"),
    ({"kind": "Namespace", "metadata": {"name": "a.b"}}, False, "DNS-1123 label"),
    ({"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n", "labels": {"a": "x" * 64}}},
     True, "valid label value"),
    ({"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n", "labels": {"a": 1}}},
     True, "valid label value"),
    ({"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n", "labels": {"A_B/c": "x"}}},
     True, "prefix"),
    ({"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n",
                                        "annotations": {"-x": "y"}}}, True, "name part"),
    ({"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n", "uid": "u"}}, True,
     "metadata.uid"),
])
def test_meta_errors(doc: dict[str, Any], namespaced: bool, problem: str) -> None:
    errors = meta_errors(doc, namespaced=namespaced)
    assert any(problem in e for e in errors), errors


def test_meta_accepts_qualified_keys() -> None:
    doc = {"kind": "ConfigMap", "metadata": {
        "name": "a.b-c", "namespace": "n",
        "labels": {"app.kubernetes.io/name": "edge-sync", "x": ""},
        "annotations": {"kustomize.toolkit.fluxcd.io/prune": "disabled"}}}
    assert meta_errors(doc, namespaced=True) == []
