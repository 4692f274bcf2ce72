"""dependsOn and driftDetection over HTTP on real processes: stored in the Edge deployment
entry, an unknown name or a cycle refused (422 naming it, nothing written), and what the edge
reports shown: a deployment waiting on another (``waitingOn``), a drifted one
(``drifted``), in the list and in ``GET`` of one, with ``/metrics`` counting the drift."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.api.conftest import report_edge
from tests.cluster_manager.api.test_deployments import HOSTS, imported_chart

DEPLOYMENT = uuids.App.EdgeDeployment


@pytest.fixture(scope="module")
def chart(stack: Stack) -> str:
    return imported_chart(stack, "Ordered chart")


@pytest.fixture
def cluster(stack: Stack) -> str:
    found = create_cluster(stack.admin, f"order-{uuid.uuid4().hex[:8]}")
    report_edge(stack, found, hosts=HOSTS)
    return found


def entries(stack: Stack, cluster: str) -> dict[str, Any]:
    r = stack.admin.get(f"/v1/app/{DEPLOYMENT}/search", params={"cluster": f'"{cluster}"'})
    assert r.status_code == 200, r.text
    return {u: stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{u}").json() for u in r.json()}


def test_depends_on_is_stored_and_unknown_names_and_cycles_are_refused(
        stack: Stack, root: Api, chart: str, cluster: str) -> None:
    path = f"/v1/cluster/{cluster}/deployment"
    broker = root.post(path, json={"name": "broker", "chart": chart})
    assert broker.status_code == 201, broker.text
    historian = root.post(path, json={"name": "historian", "chart": chart,
                                      "dependsOn": ["broker"], "driftDetection": "warn"})
    assert historian.status_code == 201, historian.text
    shown = historian.json()
    assert (shown["dependsOn"], shown["driftDetection"]) == (["broker"], "warn")
    stored = entries(stack, cluster)[shown["uuid"]]
    assert (stored["dependsOn"], stored["driftDetection"]) == (["broker"], "warn")

    before = entries(stack, cluster)
    unknown = root.post(path, json={"name": "panel", "chart": chart,
                                    "dependsOn": ["historian", "mes"]})
    assert unknown.status_code == 422 and "'mes'" in unknown.text, unknown.text
    bad_mode = root.post(path, json={"name": "panel", "chart": chart,
                                     "driftDetection": "sometimes"})
    assert bad_mode.status_code == 422 and "driftDetection" in bad_mode.text
    cycle = root.patch(f"{path}/{broker.json()['uuid']}", json={"dependsOn": ["historian"]})
    assert cycle.status_code == 422, cycle.text
    assert "broker -> historian -> broker" in cycle.text
    assert entries(stack, cluster) == before  # nothing written

    cleared = root.patch(f"{path}/{shown['uuid']}", json={"dependsOn": None,
                                                          "driftDetection": None})
    assert cleared.status_code == 200, cleared.text
    stored = entries(stack, cluster)[shown["uuid"]]
    assert "dependsOn" not in stored and "driftDetection" not in stored


def _release(deployment: str, ready: str, **more: object) -> dict[str, object]:
    return {"kind": "HelmRelease", "namespace": "fplus-edge", "name": f"app-{deployment}",
            "ready": ready, **more}


def test_the_edges_report_shows_waiting_and_drift(stack: Stack, root: Api, chart: str,
                                                  cluster: str) -> None:
    path = f"/v1/cluster/{cluster}/deployment"
    broker = root.post(path, json={"name": "broker", "chart": chart}).json()["uuid"]
    historian = root.post(path, json={"name": "historian", "chart": chart,
                                      "dependsOn": ["broker"]}).json()["uuid"]
    panel = root.post(path, json={"name": "panel", "chart": chart,
                                  "driftDetection": "warn"}).json()["uuid"]
    objects = [
        _release(broker, "Unknown", reason="Progressing"),
        _release(historian, "Unknown", reason="DependencyNotReady",
                 message=f"dependency 'fplus-edge/app-{broker}' is not ready"),
        _release(panel, "True", drifted=True)]
    report_edge(stack, cluster, deployments={
        "releases": [f"app-{d}" for d in (broker, historian, panel)], "failed": [],
        "error": None}, flux={"objects": objects, "total": 3, "ready": 1, "failed": 0,
                              "progressing": 2})
    listed = {d["name"]: d for d in root.get(path).json()["deployments"]}
    assert listed["historian"]["waitingOn"] == ["broker"]
    assert listed["historian"]["state"] == "progressing"
    assert listed["broker"]["waitingOn"] == [] and not listed["broker"]["drifted"]
    assert listed["panel"]["drifted"] is True and listed["panel"]["state"] == "ready"
    one = root.get(f"{path}/{historian}")
    assert one.status_code == 200 and one.json()["waitingOn"] == ["broker"]
    assert one.headers["ETag"]

    def drifted_metric() -> float | None:
        text = Api(stack.manager.url).get("/metrics").text
        for line in text.splitlines():
            if line.startswith("cluster_manager_deployments_drifted "):
                value = float(line.split()[1])
                return value if value >= 1 else None
        return None

    assert wait_for(drifted_metric, timeout=30, what="the drift metric") >= 1

    objects[0] = _release(broker, "True")
    objects[1] = _release(historian, "True")
    report_edge(stack, cluster, flux={"objects": objects, "total": 3, "ready": 3,
                                      "failed": 0, "progressing": 0})
    listed = {d["name"]: d for d in root.get(path).json()["deployments"]}
    assert listed["historian"]["waitingOn"] == [] and listed["historian"]["state"] == "ready"
