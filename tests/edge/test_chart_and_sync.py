"""The cluster's chart, installed by the real helm-controller from the central charts repo,
and what Edge Sync (running with the repo's RBAC) reports about it.

A small chart named like the default Helm chart template's (``edge-cluster``) is imported;
a cluster that names that template gets a HelmRelease, helm-controller installs it, a
``values`` change is a new commit that reaches the edge, a broken chart version makes the
cluster ``Degraded`` naming the HelmRelease, and a fixed one brings it back to ``Synced``.
Edge Sync also reports kwok's nodes and the Sealed Secrets controller's certificate.

On the same cluster, a fleet deployment selecting by label, of a chart template naming a
second imported chart: once the cluster is labelled to match, the leader's Edge deployment
becomes Edge Sync's HelmRelease, helm-controller installs it with the fleet deployment's
values, and the roll-up says ``ready`` from Edge Sync's report; relabelled out of the
selector, the HelmRelease is deleted and helm-controller uninstalls the release.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fplus.config_store import uuids
from harness.realedge import Edge
from harness.realedge.controlplane import EDGE_NODES
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, wait_for
from tests.edge.conftest import (
    Fplus,
    bootstrap,
    condition,
    import_central,
    reconcile_now,
    wait_applied,
    wait_ready,
)

CHART = "edge-cluster"
CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-info
data:
  cluster: {{ .Values.cluster.name | quote }}
  colour: {{ .Values.colour | default "none" | quote }}
"""
FLEET_CHART = "fleet-info"
FLEET_CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  cluster: {{ .Values.cluster | quote }}
  colour: {{ .Values.colour | quote }}
"""


def _chart(root: Path, version: str, broken: bool = False) -> Path:
    chart = root / f"chart-{version}" / CHART
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {CHART}\nversion: {version}\n")
    body = '{{ fail "this chart version is broken on purpose" }}\n' if broken else CONFIGMAP
    (chart / "templates" / "configmap.yaml").write_text(body)
    return chart


def fleet_chart(root: Path) -> Path:
    """The fleet deployment's chart: a ConfigMap of the values Edge Sync passes it."""
    chart = root / FLEET_CHART
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {FLEET_CHART}\nversion: 1.0.0\n")
    (chart / "templates" / "configmap.yaml").write_text(FLEET_CONFIGMAP)
    return chart


def _cluster(fplus: Fplus, name: str) -> dict[str, Any]:
    return fplus.json("cluster", "get", name)


def _edge_status(stack: Stack, cluster: str) -> dict[str, Any]:
    r = stack.admin.get(f"/v2/app/{uuids.App.EdgeClusterStatus}/object/{cluster}")
    return r.json() if r.status_code == 200 else {}


@pytest.fixture(scope="module")
def charted(edge: Edge, edge_stack: Stack, fplus: Fplus,
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Cluster ``charted``, bootstrapped on the module's edge, naming the default chart
    template; the fleet deployment's chart is in the charts repo before the edge fetches it."""
    scratch = tmp_path_factory.mktemp("charted")
    import_central(edge_stack, "import-chart", _chart(scratch, "0.1.0"), "--system-chart")
    import_central(edge_stack, "import-chart", fleet_chart(scratch))
    return bootstrap(edge, fplus, "charted", scratch, "--chart", uuids.Shared.EdgeClusterChart)


def test_the_cluster_chart_its_values_and_what_edge_sync_reports(
        charted: dict[str, Any], edge: Edge, edge_stack: Stack, fplus: Fplus,
        tmp_path: Path) -> None:
    uuid, namespace = charted["uuid"], charted["spec"]["namespace"]
    release = f"edge-cluster-{uuid}"
    wait_for(lambda: condition(edge.plane.get("-n", namespace, f"helmrelease/{release}"))
             .get("status") == "True", timeout=240, what="helm-controller to install")
    info = edge.plane.get("-n", namespace, f"configmap/{release}-info")
    assert info["data"] == {"cluster": "charted", "colour": "none"}

    # Edge Sync reports kwok's nodes, the controller's certificate, and Synced at the head
    status = wait_for(lambda: _edge_status(edge_stack, uuid).get("kubeseal_cert") and
                      _edge_status(edge_stack, uuid), timeout=180, what="the certificate")
    assert sorted(h["hostname"] for h in status["hosts"]) == sorted(n.name for n in EDGE_NODES)
    synced = wait_for(lambda: (c := _cluster(fplus, "charted"))["syncState"] == "Synced" and c,
                      timeout=180, what="Synced")
    assert synced["edge"]["appliedCommit"] == synced["repoCommit"]

    # a values change is a commit, and the edge applies it
    r = edge_stack.admin.patch(
        f"/v2/app/{uuids.App.EdgeClusterConfiguration}/object/{uuid}",
        json={"values": {"colour": "blue"}},
        headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 204, r.text
    wait_for(lambda: _cluster(fplus, "charted")["repoCommit"] != synced["repoCommit"],
             timeout=60, what="the new commit")
    wait_applied(edge, fplus, "charted")
    wait_for(lambda: edge.plane.get("-n", namespace, f"configmap/{release}-info")["data"]
             ["colour"] == "blue", timeout=180, what="the new values on the edge")

    # a broken chart version: Degraded, naming the HelmRelease; fixed: Synced again
    import_central(edge_stack, "import-chart", _chart(tmp_path, "0.2.0", broken=True),
                   "--system-chart")
    reconcile_now(edge, namespace, "gitrepository/helm-charts")
    degraded = wait_for(lambda: (c := _cluster(fplus, "charted"))["syncState"] == "Degraded"
                        and c, timeout=300, what="Degraded")
    assert any(f.get("kind") == "HelmRelease" and f.get("name") == release
               for f in degraded["edge"]["failing"]), degraded["edge"]
    import_central(edge_stack, "import-chart", _chart(tmp_path, "0.3.0"), "--system-chart")
    reconcile_now(edge, namespace, "gitrepository/helm-charts")
    wait_for(lambda: _cluster(fplus, "charted")["syncState"] == "Synced", timeout=300,
             what="Synced after the fix")


def _chart_template(stack: Stack, chart: str) -> str:
    """A Helm chart template of ``chart`` (from the charts repo), written as an administrator
    writes one: its object, Info name and entry."""
    r = stack.admin.post("/v2/object", json={"class": uuids.Class.HelmChart})
    assert r.status_code == 201, r.text
    template = str(r.json()["uuid"])
    for app, entry in ((uuids.App.Info, {"name": chart}),
                       (uuids.App.HelmChartTemplate, {"chart": chart, "values": {}})):
        r = stack.admin.put(f"/v2/app/{app}/object/{template}", json=entry)
        assert r.status_code in (201, 204), r.text
    return template


def test_a_fleet_deployment_reaches_a_matching_edge_through_helm_controller(
        charted: dict[str, Any], edge: Edge, edge_stack: Stack, fplus: Fplus,
        tmp_path: Path) -> None:
    uuid, namespace = charted["uuid"], charted["spec"]["namespace"]
    manager = Api(edge_stack.manager.url, ("admin", ADMIN_PASSWORD))

    def rollup(fleet: str) -> dict[str, Any]:
        r = manager.get(f"/v1/fleet-deployment/{fleet}")
        assert r.status_code == 200, r.text
        return dict(r.json())

    values = tmp_path / "values.yaml"
    values.write_text("colour: green\n")
    fleet = fplus.json("fleet", "create", "info", "--chart",
                       _chart_template(edge_stack, FLEET_CHART), "-l", "fleet=apps",
                       "--values", str(values))["uuid"]
    assert rollup(fleet)["total"] == 0  # the cluster is not labelled yet

    # labelled to match: an Edge deployment, a HelmRelease, the chart installed
    fplus("cluster", "label", "charted", "fleet=apps")
    member = wait_for(lambda: (v := rollup(fleet))["total"] == 1 and v, timeout=60,
                      what="the fleet deployment to target charted")["clusters"][0]
    assert (member["cluster"], member["name"]) == (uuid, "charted")
    release = f"{FLEET_CHART}-{member['deployment']}"
    wait_for(lambda: edge.plane.get("-n", namespace, f"helmrelease/{release}"), timeout=120,
             what="Edge Sync to apply the HelmRelease")
    applied = wait_ready(edge, f"helmrelease/{release}", namespace, timeout=240)
    assert applied["spec"]["values"] == {"cluster": "charted", "colour": "green"}
    info = edge.plane.get("-n", namespace, f"configmap/{release}")
    assert info["data"] == {"cluster": "charted", "colour": "green"}
    view = wait_for(lambda: (v := rollup(fleet))["ready"] == 1 and v, timeout=120,
                    what="the roll-up to say ready")
    assert (view["total"], view["clusters"][0]["state"]) == (1, "ready"), view

    # relabelled out of the selector: the HelmRelease and what it installed go away
    fplus("cluster", "label", "charted", "fleet=none", "--overwrite")
    wait_for(lambda: edge.plane.get("-n", namespace, f"helmrelease/{release}") is None,
             timeout=120, what="Edge Sync to delete the HelmRelease")
    wait_for(lambda: edge.plane.get("-n", namespace, f"configmap/{release}") is None,
             timeout=120, what="helm-controller to uninstall the release")
    assert rollup(fleet)["total"] == 0
