"""Core kinds of the rendered bundle validate with kubernetes-validate in strict mode.

Strict = the ``-local-strict`` schemas: unknown fields are errors, as with the API server's
strict field validation. Every object that is not a custom resource must have a schema here
(a missing schema is a failure, not the CLI's warning).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.manifests.crds import CustomResource
from tests.manifests.samples import objects

kubernetes_validate = pytest.importorskip(
    "kubernetes_validate", reason="kubernetes-validate is not installed (pip install "
    "kubernetes-validate); core kinds cannot be validated")

# An older release still common on edge distributions, and the newest the package knows.
VERSIONS = ["1.30", kubernetes_validate.latest_version()]


@pytest.mark.parametrize("version", VERSIONS)
def test_core_kinds_validate_strictly(rendered: dict[str, list[dict[str, Any]]], version: str,
                                      crds: dict[tuple[str, str], CustomResource]) -> None:
    core = [doc for _, doc in objects(rendered) if (doc["apiVersion"], doc["kind"]) not in crds]
    assert {doc["kind"] for doc in core} == {
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
        "ConfigMap", "Deployment", "Namespace"}
    for doc in core:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = ".".join(str(p) for p in exc.path)
            pytest.fail(f"{doc['kind']}/{doc['metadata']['name']}: {where}: {exc.message}")


@pytest.mark.parametrize(("doc", "problem"), [
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"A": 1}},
     "is not of type"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "dataa": {}},
     "Additional properties"),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
      "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}},
     "'selector' is a required property"),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
      "spec": {"selector": {}, "template": {"spec": {"containers": [
          {"name": "c", "image": "i", "imagePullPolcy": "Always"}]}}}},
     "Additional properties"),
    ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
      "rules": [{"apiGroups": [""], "resources": ["secrets"]}]},
     "'verbs' is a required property"),
])
def test_strict_validation_rejects(doc: dict[str, Any], problem: str) -> None:
    with pytest.raises(kubernetes_validate.ValidationError) as caught:
        kubernetes_validate.validate(doc, VERSIONS[-1], strict=True)
    assert problem in caught.value.message


def test_custom_kinds_are_unknown_to_it() -> None:
    """Why the CRD validator exists: kubernetes-validate has no Flux schemas."""
    doc = {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
           "metadata": {"name": "h"}, "spec": {}}
    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        kubernetes_validate.validate(doc, VERSIONS[-1], strict=True)
