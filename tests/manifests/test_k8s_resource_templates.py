"""The K8s resource templates Edge Sync renders: ACS shape, Flux GA, valid once rendered."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from fplus import manifests
from fplus.templating import render
from tests.manifests.crds import CustomResource
from tests.manifests.meta import meta_errors
from tests.manifests.samples import FLUX_GA, strings

D1 = "9a1e0000-1111-4222-8333-444455556666"
REPO = "5b0c0000-aaaa-4bbb-8ccc-ddddeeeeffff"

# Contexts as Edge Sync builds them (reference §4.4), plus what Edge Sync adds on apply.
CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("HelmRelease", {"uuid": D1, "name": f"edge-agent-{D1}", "chart": "edge-agent",
                     "source": "helm-charts", "values": {"cluster": "shop-floor",
                                                         "hostname": "edge-1", "n": [1, 2]}},
     {"values": {"cluster": "shop-floor", "hostname": "edge-1", "n": [1, 2]}}),
    ("HelmRelease", {"uuid": D1, "name": f"mqtt-{D1}", "chart": "mqtt-broker",
                     "source": f"helm-{REPO}"},
     {}),  # no values → key dropped
    ("GitRepository", {"uuid": REPO, "name": f"helm-{REPO}",
                       "url": f"https://git.example/uuid/{REPO}"},
     {"secretRef": {"name": "flux-secrets"}}),
    ("GitRepository", {"uuid": REPO, "name": f"helm-{REPO}", "secret": "git-pull",
                       "url": f"http://127.0.0.1:8702/uuid/{REPO}"},
     {"secretRef": {"name": "git-pull"}}),
]


def _applied(obj: dict[str, Any]) -> dict[str, Any]:
    """What Edge Sync applies: the rendered object plus namespace and its managed-by label."""
    meta = {**obj["metadata"], "namespace": "fplus-edge",
            "labels": {**obj["metadata"]["labels"], "app.kubernetes.io/managed-by": "edge-sync"}}
    return {**obj, "metadata": meta}


def test_keys_and_acs_shape() -> None:
    templates = manifests.load("k8s-resource-templates")
    assert sorted(templates) == ["GitRepository", "HelmRelease"]
    schema = manifests.load("schemas")["k8s-resource-template"]
    for kind, entry in templates.items():
        assert list(Draft202012Validator(schema).iter_errors(entry)) == []
        template = entry["template"]
        assert template["kind"] == kind
        assert entry["resources"] == [{"apiVersion": template["apiVersion"], "kind": kind}]
        assert template["apiVersion"] in FLUX_GA
        # Edge Sync owns these two (namespace: its own; managed-by: what it prunes by)
        assert "namespace" not in template["metadata"]
        assert "app.kubernetes.io/managed-by" not in template["metadata"]["labels"]


@pytest.mark.parametrize(("kind", "context", "expected_spec_part"), CASES,
                         ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(CASES)])
def test_rendered_templates_are_valid(kind: str, context: dict[str, Any],
                                      expected_spec_part: dict[str, Any],
                                      crds: dict[tuple[str, str], CustomResource]) -> None:
    obj = render(manifests.load("k8s-resource-templates")[kind]["template"], context)
    assert not [s for s in strings(obj) if "{{" in s]
    assert obj["metadata"] == {"name": context["name"],
                               "labels": {"factoryplus.app.amrc.co.uk/uuid": context["uuid"]}}
    for key, value in expected_spec_part.items():
        assert obj["spec"][key] == value
    if not expected_spec_part:
        assert "values" not in obj["spec"]
    applied = _applied(obj)
    crd = crds[obj["apiVersion"], kind]
    assert crd.errors(applied) == []
    assert meta_errors(applied, namespaced=crd.namespaced) == []


def test_helm_release_matches_acs() -> None:
    spec = manifests.load("k8s-resource-templates")["HelmRelease"]["template"]["spec"]
    assert spec == {
        "chart": {"spec": {"chart": "{{chart}}", "reconcileStrategy": "Revision",
                           "sourceRef": {"kind": "GitRepository", "name": "{{source}}"}}},
        "install": {"crds": "CreateReplace"}, "upgrade": {"crds": "CreateReplace"},
        "interval": "2m0s", "maxHistory": 1, "driftDetection": {"mode": "enabled"},
        "values": "{{values}}"}
