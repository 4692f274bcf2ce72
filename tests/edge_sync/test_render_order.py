"""dependsOn and driftDetection of Edge deployments as HelmRelease fields (pure): the
HelmReleases of the deployments named, the mode, and what cannot be ordered."""

from __future__ import annotations

from typing import Any

import pytest

from fplus import manifests
from fplus.config_store.uuids import K8sResource
from fplus.edge_sync.deployments.apply import Applier
from fplus.edge_sync.deployments.render import (
    ClusterInfo,
    ResourceType,
    load_templates,
    plan,
)
from tests.manifests.crds import load_crds

BROKER, HISTORIAN, PANEL = (f"9a1e0000-0000-4000-8000-00000000000{n}" for n in (1, 2, 3))
CHART = "77aa0000-0000-4000-8000-000000000001"
CLUSTER = ClusterInfo("shop-floor")
HR = ResourceType("helm.toolkit.fluxcd.io/v2", "HelmRelease")
CHARTS = {CHART: {"chart": "app"}}


@pytest.fixture(scope="module")
def templates():
    seeded = manifests.load("k8s-resource-templates")
    return load_templates({K8sResource.HelmRelease: seeded["HelmRelease"],
                           K8sResource.GitRepository: seeded["GitRepository"]})


def entry(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "chart": CHART, **more}


def spec(found: Any, uuid: str) -> dict[str, Any]:
    return found.manifests[HR][f"app-{uuid}"]["spec"]


def test_depends_on_names_the_helm_releases_of_those_deployments(templates) -> None:
    found = plan({BROKER: entry("broker"), HISTORIAN: entry("historian", dependsOn=["broker"]),
                  PANEL: entry("panel", dependsOn=["historian", "broker"])},
                 CHARTS, templates, CLUSTER, None)
    assert found.failed == {}
    assert "dependsOn" not in spec(found, BROKER)
    assert spec(found, HISTORIAN)["dependsOn"] == [{"name": f"app-{BROKER}"}]
    assert spec(found, PANEL)["dependsOn"] == [{"name": f"app-{HISTORIAN}"},
                                               {"name": f"app-{BROKER}"}]


def test_the_applier_gives_each_dependency_its_namespace_and_the_crd_accepts_it(
        templates) -> None:
    found = plan({BROKER: entry("broker"), HISTORIAN: entry("historian", dependsOn=["broker"])},
                 CHARTS, templates, CLUSTER, None)
    applied = Applier(None, "fplus-edge").prepare(  # type: ignore[arg-type]  # no calls
        found.manifests[HR][f"app-{HISTORIAN}"])
    assert applied["spec"]["dependsOn"] == [{"name": f"app-{BROKER}", "namespace": "fplus-edge"}]
    assert load_crds()[(HR.api_version, HR.kind)].errors(applied) == []


@pytest.mark.parametrize(("entries", "why"), [
    ({HISTORIAN: entry("historian", dependsOn=["broker"])}, "no deployment 'broker'"),
    ({BROKER: entry("broker", dependsOn=["historian"]),
      HISTORIAN: entry("historian", dependsOn=["broker"])}, "cycle"),
    ({BROKER: {"name": "broker", "chart": "77aa0000-0000-4000-8000-0000000000ff"},
      HISTORIAN: entry("historian", dependsOn=["broker"])}, "waits on 'broker'"),
])
def test_a_deployment_that_cannot_be_ordered_fails_and_is_not_applied(
        templates, entries: dict[str, Any], why: str) -> None:
    found = plan(entries, CHARTS, templates, CLUSTER, None)
    assert why in found.failed[HISTORIAN]
    assert HISTORIAN not in found.releases
    assert f"app-{HISTORIAN}" not in found.manifests[HR]


@pytest.mark.parametrize("mode", ["enabled", "warn", "disabled"])
def test_drift_detection_sets_the_mode(templates, mode: str) -> None:
    found = plan({PANEL: entry("panel", driftDetection=mode)}, CHARTS, templates, CLUSTER,
                 None)
    assert spec(found, PANEL)["driftDetection"] == {"mode": mode}
    assert load_crds()[(HR.api_version, HR.kind)].errors(
        found.manifests[HR][f"app-{PANEL}"]) == []


def test_without_a_mode_the_template_keeps_its_own(templates) -> None:
    found = plan({PANEL: entry("panel")}, CHARTS, templates, CLUSTER, None)
    assert spec(found, PANEL)["driftDetection"] == {"mode": "enabled"}


@pytest.mark.parametrize("bad", [{"dependsOn": "broker"}, {"dependsOn": [1]},
                                 {"driftDetection": "on"}])
def test_a_malformed_field_fails_the_deployment(templates, bad: dict[str, Any]) -> None:
    found = plan({PANEL: entry("panel", **bad)}, CHARTS, templates, CLUSTER, None)
    assert PANEL in found.failed
