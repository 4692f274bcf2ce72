"""The applier against the emulator: order, prune, and what it keeps."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fplus import manifests
from fplus.config_store.uuids import K8sResource
from fplus.edge_sync.deployments.apply import Applier
from fplus.edge_sync.deployments.render import ClusterInfo, load_templates, plan
from fplus.edge_sync.kube import Kube
from tests.edge_sync.conftest import api_client
from tests.edge_sync.emulator import GIT_REPOSITORIES, HELM_RELEASES, KubeHarness
from tests.edge_sync.helpers import NAMESPACE

D1 = "9a1e0000-0000-4000-8000-000000000001"
D2 = "9a1e0000-0000-4000-8000-000000000002"
CHART = "77aa0000-0000-4000-8000-000000000001"
SOURCE = "5c0e0000-0000-4000-8000-00000000000a"
CHARTS = {CHART: {"chart": "modbus-rest", "source": SOURCE, "values": {}}}
SEEDED = manifests.load("k8s-resource-templates")
TEMPLATES = load_templates({K8sResource.HelmRelease: SEEDED["HelmRelease"],
                            K8sResource.GitRepository: SEEDED["GitRepository"]})


@pytest.fixture
def applier(kube: KubeHarness) -> Iterator[Applier]:
    k = Kube(api_client(kube.url), timeout=5)
    yield Applier(k, NAMESPACE)
    k.close()


def _plan(deployments: dict):
    return plan(deployments, CHARTS, TEMPLATES, ClusterInfo("c"), "https://git")


def test_sources_first_and_failed_deployments_keep_their_objects(
        kube: KubeHarness, applier: Applier) -> None:
    result = applier.apply(_plan({D1: {"name": "a", "chart": CHART}}))
    assert result.applied == {"GitRepository": [f"helm-{SOURCE}"],
                              "HelmRelease": [f"modbus-rest-{D1}"]}
    patches = [r.url.path for r in kube.requests("/namespaces/") if r.method == "PATCH"]
    assert ["gitrepositories" in p for p in patches] == [True, False]

    # D1's chart template vanishes: its release and the source it uses are kept
    broken = plan({D1: {"name": "a", "chart": CHART}}, {}, TEMPLATES, ClusterInfo("c"), None)
    result = applier.apply(broken)
    assert result.deleted == {}
    assert result.kept == {"HelmRelease": [f"modbus-rest-{D1}"],
                           "GitRepository": [f"helm-{SOURCE}"]}
    assert f"modbus-rest-{D1}" in kube.objects(HELM_RELEASES, NAMESPACE)

    # the entry is deleted for real: releases first, then the unused source
    result = applier.apply(_plan({}))
    assert result.deleted == {"HelmRelease": [f"modbus-rest-{D1}"],
                              "GitRepository": [f"helm-{SOURCE}"]}
    deletes = [r.url.path for r in kube.requests("/namespaces/") if r.method == "DELETE"]
    assert ["helmreleases" in p for p in deletes] == [True, False]
    assert kube.objects(GIT_REPOSITORIES, NAMESPACE) == {}


def test_unlabelled_objects_are_never_touched(kube: KubeHarness, applier: Applier) -> None:
    for name in ("helm-charts", f"helm-{SOURCE}"):
        kube.put(GIT_REPOSITORIES, NAMESPACE, name, {
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": name, "namespace": NAMESPACE}})
    applier.apply(_plan({D2: {"name": "b", "chart": CHART}}))
    applier.apply(_plan({}))
    assert set(kube.objects(GIT_REPOSITORIES, NAMESPACE)) == {"helm-charts"}
    # the same-named one was adopted by apply (labelled), so it is ours to prune
    assert kube.objects(HELM_RELEASES, NAMESPACE) == {}
