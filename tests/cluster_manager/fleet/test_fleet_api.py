"""Fleet deployments on the real services: ``/v1/fleet-deployment`` and the leader's
expansion into Edge deployments, relabelling, new clusters, deletion, a person's deployment
of the same name, roll-ups from edge reports, and the ``/metrics`` gauge."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fplus.cluster_manager.rollouts.fleet_entry import member_uuid
from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.api.test_metrics import sample
from tests.cluster_manager.fleet.conftest import CHART
from tests.conftest import grant, make_user

CONFIG, EDGE = uuids.App.EdgeClusterConfiguration, uuids.App.EdgeClusterStatus
DEPLOYMENT, FLEET = uuids.App.EdgeDeployment, uuids.App.FleetDeployment
MERGE = {"Content-Type": "application/merge-patch+json"}


def deployments(stack: Stack, **where: str) -> dict[str, dict[str, Any]]:
    """Every Edge deployment entry (those matching ``where``), by uuid."""
    admin = stack.admin
    found = {}
    for obj in admin.get(f"/v2/app/{DEPLOYMENT}/object").json():
        r = admin.get(f"/v2/app/{DEPLOYMENT}/object/{obj}")
        if r.status_code == 200 and all(r.json().get(k) == v for k, v in where.items()):
            found[obj] = r.json()
    return found


def of_fleet(stack: Stack, fleet: str) -> dict[str, str]:
    """The fleet deployment's Edge deployments: cluster -> uuid."""
    return {d["cluster"]: uid for uid, d in deployments(stack, fleetDeployment=fleet).items()}


def settled(stack: Stack, fleet: str, clusters: set[str]) -> dict[str, str]:
    """Wait until the fleet deployment has deployments on exactly ``clusters``."""
    def check() -> dict[str, str] | None:
        found = of_fleet(stack, fleet)
        return found if set(found) == clusters else None
    if not clusters:
        wait_for(lambda: check() is not None, what=f"no deployments of {fleet}")
        return {}
    return wait_for(check, what=f"deployments of {fleet} on {sorted(clusters)}")


def relabel(stack: Stack, cluster: str, labels: dict[str, Any]) -> None:
    r = stack.admin.patch(f"/v2/app/{CONFIG}/object/{cluster}", json={"labels": labels},
                          headers=MERGE)
    assert r.status_code == 204, r.text


def person_deployment(stack: Stack, cluster: str, name: str) -> str:
    """An Edge deployment written straight into the Config Store, as a person would."""
    r = stack.admin.post("/v2/object", json={"class": uuids.Class.EdgeDeployment})
    assert r.status_code == 201, r.text
    uid = r.json()["uuid"]
    entry = {"name": name, "cluster": cluster, "chart": CHART, "values": {"mine": True}}
    assert stack.admin.put(f"/v2/app/{DEPLOYMENT}/object/{uid}", json=entry).status_code == 201
    return uid


def create(root: Api, **body: Any) -> dict[str, Any]:
    r = root.post("/v1/fleet-deployment", json={"chart": CHART, **body})
    assert r.status_code == 201, r.text
    return r.json()


def test_expands_follows_labels_and_new_clusters_and_deletes(stack: Stack, root: Api) -> None:
    site = f"s{uuid.uuid4().hex[:8]}"
    a = create_cluster(stack.admin, "fa", labels={"site": site, "tier": "line"})
    b = create_cluster(stack.admin, "fb", labels={"site": site})
    c = create_cluster(stack.admin, "fc", labels={"site": "elsewhere"})
    fleet = create(root, name="historian", values={"x": 1}, overrides={b: {"x": 2}},
                   selector={"matchLabels": {"site": site}})
    assert fleet["name"] == "historian" and fleet["total"] == 2
    assert fleet["spec"]["overrides"] == {b: {"x": 2}} and fleet["spec"]["createdAt"]
    found = settled(stack, fleet["uuid"], {a, b})
    assert found == {a: member_uuid(fleet["uuid"], a), b: member_uuid(fleet["uuid"], b)}
    entries = deployments(stack, fleetDeployment=fleet["uuid"])
    assert {(e["cluster"], e["name"], e["chart"], e["values"]["x"]) for e in entries.values()} \
        == {(a, "historian", CHART, 1), (b, "historian", CHART, 2)}
    r = stack.admin.get(f"/v2/app/{uuids.App.Info}/object/{found[a]}")
    assert r.json()["name"] == "historian"

    relabel(stack, a, {"site": "elsewhere"})
    relabel(stack, c, {"site": site})
    settled(stack, fleet["uuid"], {b, c})

    d = create_cluster(stack.admin, "fd", labels={"site": site})
    settled(stack, fleet["uuid"], {b, c, d})

    r = root.patch(f"/v1/fleet-deployment/{fleet['uuid']}", json={"values": {"x": 5}},
                   headers=MERGE)
    assert r.status_code == 200, r.text
    wait_for(lambda: {e["values"]["x"] for e in
                      deployments(stack, fleetDeployment=fleet["uuid"]).values()} == {2, 5},
             what="values changed everywhere")

    assert root.delete(f"/v1/fleet-deployment/{fleet['uuid']}").status_code == 202
    settled(stack, fleet["uuid"], set())
    assert root.get(f"/v1/fleet-deployment/{fleet['uuid']}").status_code == 404


def test_a_persons_deployment_is_refused_at_creation_and_never_overwritten(
        stack: Stack, root: Api) -> None:
    site = f"s{uuid.uuid4().hex[:8]}"
    a = create_cluster(stack.admin, "pa", labels={"site": site})
    b = create_cluster(stack.admin, "pb", labels={"site": "other"})
    mine = person_deployment(stack, a, "mqtt-bridge")
    before = deployments(stack)
    r = root.post("/v1/fleet-deployment", json={"name": "mqtt-bridge", "chart": CHART,
                                                 "selector": {"matchLabels": {"site": site}}})
    assert r.status_code == 422 and r.json()["error"].startswith("name:"), r.text
    assert mine in r.json()["error"]
    assert deployments(stack) == before
    assert stack.admin.get(f"/v2/app/{FLEET}/object").json() == [] or all(
        stack.admin.get(f"/v2/app/{FLEET}/object/{f}").json()["name"] != "mqtt-bridge"
        for f in stack.admin.get(f"/v2/app/{FLEET}/object").json())

    # created where it does not conflict; a cluster that starts matching later conflicts
    fleet = create(root, name="mqtt-bridge", clusters=[b])
    settled(stack, fleet["uuid"], {b})
    r = root.patch(f"/v1/fleet-deployment/{fleet['uuid']}",
                   json={"selector": {"matchLabels": {"site": site}}}, headers=MERGE)
    assert r.status_code == 422 and r.json()["error"].startswith("name:"), r.text
    relabel(stack, b, {"site": site})  # no conflict from b itself
    other = create_cluster(stack.admin, "pc", labels={"site": "third"})
    person_deployment(stack, other, "mqtt-bridge")
    stack.admin.patch(f"/v2/app/{FLEET}/object/{fleet['uuid']}",
                      json={"clusters": [b, other]}, headers=MERGE)
    def two() -> dict[str, Any] | None:
        v = root.get(f"/v1/fleet-deployment/{fleet['uuid']}").json()
        return v if v["total"] == 2 else None
    view = wait_for(two, what="the conflict reported")
    conflict = next(c for c in view["clusters"] if c["cluster"] == other)
    assert conflict["state"] == "failed" and "per-cluster deployment" in conflict["message"]
    assert deployments(stack)[mine] == before[mine]
    assert set(of_fleet(stack, fleet["uuid"])) == {b}


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "x", "chart": str(uuid.uuid4()), "selector": {}}, "chart"),
    ({"name": "x", "chart": CHART, "selector": {"matchLabels": {"bad key!": "v"}}},
     "selector.matchLabels.bad key!"),
    ({"name": "x", "chart": CHART, "selector": {}, "values": [1]}, "values"),
    ({"name": "x", "chart": CHART, "clusters": [str(uuid.uuid4())]}, "clusters"),
    ({"name": "x", "chart": CHART, "clusters": ["nope"]}, "clusters"),
    ({"name": "x", "chart": CHART}, "selector"),
    ({"name": "", "chart": CHART, "selector": {}}, "name"),
])
def test_bad_input_is_refused_naming_the_field(stack: Stack, root: Api, body: dict[str, Any],
                                               field: str) -> None:
    before = stack.admin.get(f"/v2/app/{FLEET}/object").json()
    r = root.post("/v1/fleet-deployment", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["error"].startswith(f"{field}:"), r.json()
    assert stack.admin.get(f"/v2/app/{FLEET}/object").json() == before


def test_permissions_and_path_segments(stack: Stack, root: Api) -> None:
    uid, user = make_user(stack.admin)
    session = Api(stack.manager.url, user.auth)
    body = {"name": "x", "chart": CHART, "selector": {}}
    assert session.post("/v1/fleet-deployment", json=body).status_code == 403
    assert session.get("/v1/fleet-deployment").status_code == 403
    grant(stack.admin, uid, uuids.ConfigDBPerm.ReadApp, FLEET)
    wait_for(lambda: session.get("/v1/fleet-deployment").status_code == 200,
             what="the read grant applied")
    assert session.post("/v1/fleet-deployment", json=body).status_code == 403
    assert Api(stack.manager.url).get("/v1/fleet-deployment").status_code == 401
    assert root.get("/v1/fleet-deployment/not-a-uuid").status_code == 400
    assert root.get(f"/v1/fleet-deployment/{uuid.uuid4()}").status_code == 404


def report(stack: Stack, cluster: str, member: str, ready: str | None,
           failed: str | None = None) -> None:
    """Write the edge's report of ``member`` as Edge Sync would."""
    release = f"edge-cluster-{member}"
    objects = [] if ready is None else [
        {"kind": "HelmRelease", "namespace": "fplus-edge", "name": release, "ready": ready,
         "revision": "0.1.0", **({"message": "install failed"} if ready == "False" else {})}]
    fields = {"deployments": {"releases": [] if failed else [release],
                              "failed": [{"uuid": member, "error": failed}] if failed else []},
              "flux": {"objects": objects, "total": len(objects),
                       "ready": sum(o["ready"] == "True" for o in objects),
                       "failed": sum(o["ready"] == "False" for o in objects),
                       "progressing": sum(o["ready"] == "Unknown" for o in objects)}}
    r = stack.admin.patch(f"/v2/app/{EDGE}/object/{cluster}", json=fields, headers=MERGE)
    assert r.status_code == 204, r.text


def test_rollup_counts_follow_edge_reports(stack: Stack, root: Api) -> None:
    site = f"s{uuid.uuid4().hex[:8]}"
    clusters = [create_cluster(stack.admin, f"r{n}", labels={"site": site}) for n in range(5)]
    fleet = create(root, name="rollup", selector={"matchLabels": {"site": site}})
    members = settled(stack, fleet["uuid"], set(clusters))
    url = f"/v1/fleet-deployment/{fleet['uuid']}"
    view = root.get(url).json()
    assert (view["total"], view["unknown"]) == (5, 5)
    report(stack, clusters[0], members[clusters[0]], "True")
    report(stack, clusters[1], members[clusters[1]], "False")
    report(stack, clusters[2], members[clusters[2]], "Unknown")
    report(stack, clusters[3], members[clusters[3]], None, failed="chart missing")
    r = root.get(url)
    view = r.json()
    assert r.headers["ETag"]
    counts = {k: view[k] for k in ("total", "ready", "progressing", "failed", "unknown")}
    assert counts == {"total": 5, "ready": 1, "progressing": 1, "failed": 2, "unknown": 1}
    by_cluster = {c["cluster"]: c for c in view["clusters"]}
    assert by_cluster[clusters[0]]["commit"] == "0.1.0"
    assert by_cluster[clusters[0]]["name"] == "r0"
    assert by_cluster[clusters[1]]["message"] == "install failed"
    assert by_cluster[clusters[3]]["message"] == "chart missing"
    listed = {f["uuid"]: f for f in root.get("/v1/fleet-deployment").json()["fleetDeployments"]}
    assert listed[fleet["uuid"]]["ready"] == 1
    def gauge() -> str | None:
        t = Api(stack.manager.url).get("/metrics").text
        return t if sample(t, "cluster_manager_fleet_deployments", state="ready") >= 1 else None
    text = wait_for(gauge, timeout=40, what="the gauge")
    assert sample(text, "cluster_manager_fleet_deployments", state="failed") >= 2
    r = root.patch(url, json={"values": {"a": 1}}, headers=MERGE | {"If-Match": '"stale"'})
    assert r.status_code == 412, r.text
