"""A fleet deployment's dependsOn and driftDetection on the real services: carried into the
Edge deployment the leader writes on each cluster, a name unknown on one targeted cluster
or a cycle refused (422 naming the cluster, nothing written), and the roll-up counting the
clusters whose edge reports the deployment drifted."""

from __future__ import annotations

import uuid
from typing import Any

from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.fleet.conftest import CHART
from tests.cluster_manager.fleet.test_fleet_api import create, person_deployment, settled

EDGE, FLEET = uuids.App.EdgeClusterStatus, uuids.App.FleetDeployment
MERGE = {"Content-Type": "application/merge-patch+json"}


def fleet_uuids(stack: Stack) -> set[str]:
    return set(stack.admin.get(f"/v2/app/{FLEET}/object").json())


def test_depends_on_is_checked_on_each_cluster_and_carried(stack: Stack, root: Api) -> None:
    site = f"s{uuid.uuid4().hex[:8]}"
    leeds = create_cluster(stack.admin, f"leeds-{site}", labels={"site": site})
    york = create_cluster(stack.admin, f"york-{site}", labels={"site": site})
    selector = {"matchLabels": {"site": site}}
    person_deployment(stack, leeds, "broker")  # on leeds only
    before = fleet_uuids(stack)
    r = root.post("/v1/fleet-deployment", json={"name": "historian", "chart": CHART,
                                                 "selector": selector,
                                                 "dependsOn": ["broker"]})
    assert r.status_code == 422, r.text
    assert f"on cluster {york}" in r.text and "'broker'" in r.text
    assert fleet_uuids(stack) == before  # nothing written

    broker = create(root, name="broker", clusters=[york])  # leeds has the person's
    historian = create(root, name="historian", selector=selector, dependsOn=["broker"],
                       driftDetection="warn")
    written = settled(stack, historian["uuid"], {leeds, york})
    for member in written.values():
        entry = stack.admin.get(f"/v2/app/{uuids.App.EdgeDeployment}/object/{member}").json()
        assert (entry["dependsOn"], entry["driftDetection"]) == (["broker"], "warn")

    cycle = root.patch(f"/v1/fleet-deployment/{broker['uuid']}",
                       json={"dependsOn": ["historian"]}, headers=MERGE)
    assert cycle.status_code == 422, cycle.text
    assert "broker -> historian -> broker" in cycle.text
    spec = root.get(f"/v1/fleet-deployment/{broker['uuid']}").json()["spec"]
    assert "dependsOn" not in spec


def test_the_roll_up_counts_drifted_clusters(stack: Stack, root: Api) -> None:
    site = f"d{uuid.uuid4().hex[:8]}"
    a = create_cluster(stack.admin, f"a-{site}", labels={"site": site})
    b = create_cluster(stack.admin, f"b-{site}", labels={"site": site})
    fleet = create(root, name="panel", selector={"matchLabels": {"site": site}},
                   driftDetection="warn")
    members = settled(stack, fleet["uuid"], {a, b})
    for cluster, drifted in ((a, True), (b, False)):
        release: dict[str, Any] = {"kind": "HelmRelease", "namespace": "fplus-edge",
                                   "name": f"historian-{members[cluster]}", "ready": "True"}
        if drifted:
            release["drifted"] = True
        r = stack.admin.patch(f"/v2/app/{EDGE}/object/{cluster}", headers=MERGE, json={
            "deployments": {"releases": [release["name"]], "failed": [], "error": None},
            "flux": {"objects": [release], "total": 1, "ready": 1, "failed": 0,
                     "progressing": 0}})
        assert r.status_code == 204, r.text
    view = wait_for(lambda: (v := root.get(f"/v1/fleet-deployment/{fleet['uuid']}").json())
                    ["ready"] == 2 and v, what="both clusters ready")
    assert view["drifted"] == 1
    assert {c["cluster"]: c["drifted"] for c in view["clusters"]} == {a: True, b: False}
    listed = {f["uuid"]: f for f in root.get("/v1/fleet-deployment").json()["fleetDeployments"]}
    assert listed[fleet["uuid"]]["drifted"] == 1
