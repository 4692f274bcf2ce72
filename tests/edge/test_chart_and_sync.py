"""The cluster's chart, installed by the real helm-controller from the central charts repo,
and what Edge Sync (running with the repo's RBAC) reports about it.

A small chart named like the default Helm chart template's (``edge-cluster``) is imported;
a cluster that names that template gets a HelmRelease, helm-controller installs it, a
``values`` change is a new commit that reaches the edge, a broken chart version makes the
cluster ``Degraded`` naming the HelmRelease, and a fixed one brings it back to ``Synced``.
Edge Sync also reports kwok's nodes and the Sealed Secrets controller's certificate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fplus.config_store import uuids
from harness.realedge import Edge
from harness.realedge.controlplane import EDGE_NODES
from harness.stack import Stack, wait_for
from tests.edge.conftest import (
    Fplus,
    bootstrap,
    condition,
    import_central,
    reconcile_now,
    wait_applied,
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


def _chart(root: Path, version: str, broken: bool = False) -> Path:
    chart = root / f"chart-{version}" / CHART
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {CHART}\nversion: {version}\n")
    body = '{{ fail "this chart version is broken on purpose" }}\n' if broken else CONFIGMAP
    (chart / "templates" / "configmap.yaml").write_text(body)
    return chart


def _cluster(fplus: Fplus, name: str) -> dict[str, Any]:
    return fplus.json("cluster", "get", name)


def _edge_status(stack: Stack, cluster: str) -> dict[str, Any]:
    r = stack.admin.get(f"/v2/app/{uuids.App.EdgeClusterStatus}/object/{cluster}")
    return r.json() if r.status_code == 200 else {}


def test_the_cluster_chart_its_values_and_what_edge_sync_reports(
        edge: Edge, edge_stack: Stack, fplus: Fplus, tmp_path: Path) -> None:
    import_central(edge_stack, "import-chart", _chart(tmp_path, "0.1.0"))
    cluster = bootstrap(edge, fplus, "charted", tmp_path, "--chart",
                        uuids.Shared.EdgeClusterChart)
    uuid, namespace = cluster["uuid"], cluster["spec"]["namespace"]
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
    import_central(edge_stack, "import-chart", _chart(tmp_path, "0.2.0", broken=True))
    reconcile_now(edge, namespace, "gitrepository/helm-charts")
    degraded = wait_for(lambda: (c := _cluster(fplus, "charted"))["syncState"] == "Degraded"
                        and c, timeout=300, what="Degraded")
    assert any(f.get("kind") == "HelmRelease" and f.get("name") == release
               for f in degraded["edge"]["failing"]), degraded["edge"]
    import_central(edge_stack, "import-chart", _chart(tmp_path, "0.3.0"))
    reconcile_now(edge, namespace, "gitrepository/helm-charts")
    wait_for(lambda: _cluster(fplus, "charted")["syncState"] == "Synced", timeout=300,
             what="Synced after the fix")
