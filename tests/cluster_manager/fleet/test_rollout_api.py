"""Paced rollouts on the real services: a 3-step rollout over 9 labelled clusters, each step
waiting for its clusters' ready reports, a manual pause waiting for resume, a failure halting
the rollout with the cluster named, abort leaving the clusters as they are, and the
``/v1/rollout`` refusals."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from fplus.cluster_manager.rollouts.fleet_entry import member_uuid
from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.fleet.conftest import CHART
from tests.cluster_manager.fleet.test_fleet_api import MERGE, create, deployments
from tests.conftest import make_user

EDGE, ROLLOUT = uuids.App.EdgeClusterStatus, uuids.App.FleetRolloutStatus
WAIT = 120.0


def values(stack: Stack, fleet: str) -> dict[str, Any]:
    """cluster -> the ``v`` of the fleet deployment's Edge deployment there."""
    return {e["cluster"]: (e.get("values") or {}).get("v")
            for e in deployments(stack, fleetDeployment=fleet).values()}


def report(stack: Stack, cluster: str, fleet: str, failed: str | None = None) -> None:
    """The edge's report of the fleet deployment's release: ready now, or failed."""
    member = member_uuid(fleet, cluster)
    release = f"edge-cluster-{member}"
    since = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    objects = [] if failed else [{"kind": "HelmRelease", "namespace": "fplus-edge",
                                  "name": release, "ready": "True", "since": since}]
    fields = {"deployments": {"releases": [] if failed else [release],
                              "failed": [{"uuid": member, "error": failed}] if failed else []},
              "flux": {"objects": objects, "total": len(objects), "ready": len(objects),
                       "failed": 0, "progressing": 0}}
    r = stack.admin.patch(f"/v2/app/{EDGE}/object/{cluster}", json=fields, headers=MERGE)
    assert r.status_code == 204, r.text


def status_when(root: Api, fleet: str, what: str, check: Any) -> dict[str, Any]:
    def look() -> dict[str, Any] | None:
        view = root.get(f"/v1/rollout/{fleet}").json()
        return view if check(view) else None
    return wait_for(look, timeout=WAIT, what=what)


def test_three_steps_wait_for_ready_pause_for_resume_halt_on_failure_and_abort(
        stack: Stack, root: Api) -> None:
    site = f"s{uuid.uuid4().hex[:8]}"
    clusters = sorted(create_cluster(stack.admin, f"ro{n}", labels={"site": site})
                      for n in range(9))
    steps = [clusters[:3], clusters[3:6], clusters[6:]]
    fleet = create(root, name="paced", values={"v": 1},
                   selector={"matchLabels": {"site": site}},
                   rollout={"steps": [{"clusters": 3}, {"clusters": "34%", "pause": "manual"}]})
    f = fleet["uuid"]

    # created: only step 1 gets it
    view = status_when(root, f, "step 1 begun", lambda v: v["state"] == "Progressing")
    assert [s["clusters"] for s in view["steps"]] == steps and view["step"] == 0
    wait_for(lambda: values(stack, f) == dict.fromkeys(steps[0], 1), timeout=WAIT,
             what="step 1's deployments")
    for cluster in steps[0]:
        report(stack, cluster, f)
    wait_for(lambda: values(stack, f) == dict.fromkeys(clusters[:6], 1), timeout=WAIT,
             what="step 2's deployments")

    # step 2 ready: the manual pause holds step 3 back until resume
    for cluster in steps[1]:
        report(stack, cluster, f)
    view = status_when(root, f, "paused after step 2", lambda v: v["state"] == "Paused")
    assert view["step"] == 1 and view["steps"][1]["state"] == "Done"
    assert set(values(stack, f)) == set(clusters[:6])
    assert root.post(f"/v1/rollout/{f}/pause").status_code == 409  # already paused
    r = root.post(f"/v1/rollout/{f}/resume")
    assert r.status_code == 202 and r.json()["action"] == "resume", r.text
    wait_for(lambda: values(stack, f) == dict.fromkeys(clusters, 1), timeout=WAIT,
             what="step 3's deployments")
    for cluster in steps[2]:
        report(stack, cluster, f)
    status_when(root, f, "complete", lambda v: v["state"] == "Complete")

    # a change is a new rollout: step 1 only; a failure there halts it, naming the cluster
    r = root.patch(f"/v1/fleet-deployment/{f}", json={"values": {"v": 2}}, headers=MERGE)
    assert r.status_code == 200, r.text
    wait_for(lambda: values(stack, f) == dict.fromkeys(steps[0], 2)
             | dict.fromkeys(clusters[3:], 1), timeout=WAIT, what="the change on step 1 only")
    report(stack, steps[0][0], f)
    report(stack, steps[0][1], f, failed="image pull failed")
    view = status_when(root, f, "halted", lambda v: v["state"] == "Halted")
    assert view["failed"] == [{"cluster": steps[0][1], "message": "image pull failed"}]
    assert values(stack, f) == dict.fromkeys(steps[0], 2) | dict.fromkeys(clusters[3:], 1)

    # abort: nothing moves, and the answer and the status say so
    r = root.post(f"/v1/rollout/{f}/abort")
    assert r.status_code == 202, r.text
    assert "leaves every cluster as it is" in r.json()["message"]
    assert r.json()["updated"] == steps[0]
    view = status_when(root, f, "aborted", lambda v: v["state"] == "Aborted")
    assert "leaves every cluster as it is" in view["message"]
    report(stack, steps[0][1], f)
    assert root.post(f"/v1/rollout/{f}/resume").status_code == 409
    assert values(stack, f) == dict.fromkeys(steps[0], 2) | dict.fromkeys(clusters[3:], 1)
    stored = stack.admin.get(f"/v2/app/{ROLLOUT}/object/{f}").json()
    assert stored["state"] == "Aborted" and stored["revision"] == view["revision"]


def test_refusals(stack: Stack, root: Api) -> None:
    site = f"s{uuid.uuid4().hex[:8]}"
    a = create_cluster(stack.admin, "rr", labels={"site": site})
    plain = create(root, name="plain", clusters=[a])
    assert root.get(f"/v1/rollout/{plain['uuid']}").status_code == 404
    assert root.post(f"/v1/rollout/{plain['uuid']}/abort").status_code == 404
    assert root.get(f"/v1/rollout/{uuid.uuid4()}").status_code == 404
    assert root.get("/v1/rollout/not-a-uuid").status_code == 400
    assert root.post(f"/v1/rollout/{plain['uuid']}/restart").status_code in (404, 405)
    before = stack.admin.get(f"/v2/app/{uuids.App.FleetDeployment}/object").json()
    r = root.post("/v1/fleet-deployment", json={
        "name": "x", "chart": CHART, "clusters": [a],
        "rollout": {"steps": [{"clusters": "0%"}]}})
    assert r.status_code == 422 and r.json()["error"].startswith("rollout.steps[0].clusters:")
    r = root.patch(f"/v1/fleet-deployment/{plain['uuid']}",
                   json={"rolloutRequest": {"action": "abort", "rolloutId": "x", "at": "t"}},
                   headers=MERGE)
    assert r.status_code == 422 and r.json()["error"].startswith("rolloutRequest:")
    assert stack.admin.get(f"/v2/app/{uuids.App.FleetDeployment}/object").json() == before
    paced = create(root, name="paced-perm", clusters=[a], rollout={"maxUnavailable": 1})
    _, user = make_user(stack.admin)
    session = Api(stack.manager.url, user.auth)
    assert session.get(f"/v1/rollout/{paced['uuid']}").status_code == 403
    for action in ("pause", "rollback"):
        assert session.post(f"/v1/rollout/{paced['uuid']}/{action}").status_code == 403
    assert session.post(f"/v1/rollout/{paced['uuid']}/start-now",
                        json={"clusters": [a]}).status_code == 403
    assert Api(stack.manager.url).get(f"/v1/rollout/{paced['uuid']}").status_code == 401
