"""The health gates, rollbacks and maintenance windows of fleet deployment rollouts on the
real services: ``onFailure: rollback`` giving the changed clusters their previous values back
while later steps never see the new ones, a rollback by request of a halted rollout,
``offline: skip`` leaving a silent edge out until it reports again, ``minReadySeconds``
holding a step, a window holding a cluster until ``start-now``, and the refusals."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from fplus.cluster_manager.rollouts.fleet_entry import member_uuid
from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.fleet.test_fleet_api import MERGE, create
from tests.cluster_manager.fleet.test_rollout_api import WAIT, report, status_when, values

EDGE = uuids.App.EdgeClusterStatus


def _clusters(stack: Stack, prefix: str, count: int) -> tuple[str, list[str]]:
    site = f"s{uuid.uuid4().hex[:8]}"
    return site, sorted(create_cluster(stack.admin, f"{prefix}{n}", labels={"site": site})
                        for n in range(count))


def _seen(stack: Stack, cluster: str, ago: float = 0) -> None:
    """The edge's heartbeat, ``ago`` seconds old."""
    at = (datetime.now(UTC) - timedelta(seconds=ago)).isoformat(timespec="seconds")
    r = stack.admin.patch(f"/v2/app/{EDGE}/object/{cluster}",
                          json={"lastSeen": at.replace("+00:00", "Z")}, headers=MERGE)
    assert r.status_code == 204, r.text


def _change(root: Api, fleet: str, body: dict[str, Any]) -> None:
    r = root.patch(f"/v1/fleet-deployment/{fleet}", json=body, headers=MERGE)
    assert r.status_code == 200, r.text


def _all_ready(stack: Stack, fleet: str, clusters: list[str]) -> None:
    for cluster in clusters:
        _seen(stack, cluster)
        report(stack, cluster, fleet)


def test_on_failure_rollback_returns_the_changed_clusters_and_spares_later_steps(
        stack: Stack, root: Api) -> None:
    site, clusters = _clusters(stack, "rb", 4)
    rollout = {"steps": [{"clusters": 2}], "onFailure": "rollback"}
    fleet = create(root, name="rolls-back", values={"v": 1},
                   selector={"matchLabels": {"site": site}}, rollout=rollout)["uuid"]
    wait_for(lambda: values(stack, fleet) == dict.fromkeys(clusters[:2], 1), timeout=WAIT,
             what="step 1")
    _all_ready(stack, fleet, clusters[:2])
    wait_for(lambda: values(stack, fleet) == dict.fromkeys(clusters, 1), timeout=WAIT,
             what="step 2")
    _all_ready(stack, fleet, clusters)
    status_when(root, fleet, "complete", lambda v: v["state"] == "Complete")

    _change(root, fleet, {"values": {"v": 2}})
    wait_for(lambda: values(stack, fleet) == dict.fromkeys(clusters[:2], 2)
             | dict.fromkeys(clusters[2:], 1), timeout=WAIT, what="the change on step 1")
    report(stack, clusters[0], fleet)
    report(stack, clusters[1], fleet, failed="the new version crashes")
    view = status_when(root, fleet, "rolled back", lambda v: v["state"] == "RolledBack")
    assert clusters[1] in view["reason"] and view["failed"][0]["cluster"] == clusters[1]
    assert "what it had before" in view["message"]
    wait_for(lambda: values(stack, fleet) == dict.fromkeys(clusters, 1), timeout=WAIT,
             what="the previous values back on step 1")
    assert view["updated"] == []


def test_a_halted_rollout_rolls_back_on_request_and_a_complete_one_does_not(
        stack: Stack, root: Api) -> None:
    site, clusters = _clusters(stack, "rq", 2)
    fleet = create(root, name="asks-back", values={"v": 1},
                   selector={"matchLabels": {"site": site}},
                   rollout={"steps": [{"clusters": 1}]})["uuid"]
    wait_for(lambda: values(stack, fleet) == dict.fromkeys(clusters[:1], 1), timeout=WAIT,
             what="step 1")
    _all_ready(stack, fleet, clusters[:1])
    wait_for(lambda: len(values(stack, fleet)) == 2, timeout=WAIT, what="step 2")
    _all_ready(stack, fleet, clusters)
    status_when(root, fleet, "complete", lambda v: v["state"] == "Complete")
    r = root.post(f"/v1/rollout/{fleet}/rollback")
    assert r.status_code == 409 and "Complete" in r.json()["error"], r.text

    _change(root, fleet, {"values": {"v": 2}})
    wait_for(lambda: values(stack, fleet)[clusters[0]] == 2, timeout=WAIT, what="the change")
    report(stack, clusters[0], fleet, failed="broken")
    status_when(root, fleet, "halted", lambda v: v["state"] == "Halted")
    assert values(stack, fleet) == {clusters[0]: 2, clusters[1]: 1}
    r = root.post(f"/v1/rollout/{fleet}/rollback")
    assert r.status_code == 202 and r.json()["action"] == "rollback", r.text
    status_when(root, fleet, "rolled back", lambda v: v["state"] == "RolledBack")
    wait_for(lambda: values(stack, fleet) == dict.fromkeys(clusters, 1), timeout=WAIT,
             what="the previous values back")


def test_offline_skip_leaves_a_silent_edge_out_until_it_reports(
        stack: Stack, root: Api) -> None:
    site, clusters = _clusters(stack, "off", 2)
    awake, asleep = clusters
    _seen(stack, awake)
    _seen(stack, asleep, ago=3600)
    fleet = create(root, name="skips", values={"v": 1},
                   selector={"matchLabels": {"site": site}},
                   rollout={"offline": "skip"})["uuid"]
    wait_for(lambda: values(stack, fleet) == {awake: 1}, timeout=WAIT, what="the awake one")
    report(stack, awake, fleet)
    view = status_when(root, fleet, "complete", lambda v: v["state"] == "Complete")
    assert [s["cluster"] for s in view["skipped"]] == [asleep]
    assert "given" not in view["skipped"][0] and values(stack, fleet) == {awake: 1}
    _seen(stack, asleep)  # it reports again
    wait_for(lambda: values(stack, fleet) == dict.fromkeys(clusters, 1), timeout=WAIT,
             what="the skipped one given the revision")
    view = status_when(root, fleet, "given", lambda v: "given" in v["skipped"][0])
    assert asleep in view["updated"]


def test_min_ready_seconds_holds_a_step_after_the_first_ready_report(
        stack: Stack, root: Api) -> None:
    site, clusters = _clusters(stack, "soak", 2)
    fleet = create(root, name="soaks", values={"v": 1},
                   selector={"matchLabels": {"site": site}},
                   rollout={"steps": [{"clusters": 1}], "minReadySeconds": 3})["uuid"]
    wait_for(lambda: values(stack, fleet) == {clusters[0]: 1}, timeout=WAIT, what="step 1")
    report(stack, clusters[0], fleet)
    view = status_when(root, fleet, "soaking",
                       lambda v: clusters[0] in v["steps"][0].get("soaking", {}))
    assert view["step"] == 0 and values(stack, fleet) == {clusters[0]: 1}
    status_when(root, fleet, "step 2 after the soak", lambda v: v["step"] == 1)


def test_max_failures_lets_one_fail_and_halts_on_the_next(stack: Stack, root: Api) -> None:
    site, clusters = _clusters(stack, "mf", 3)
    fleet = create(root, name="tolerant", values={"v": 1},
                   selector={"matchLabels": {"site": site}},
                   rollout={"steps": [{"clusters": 1}, {"clusters": 1}],
                            "maxFailures": 1})["uuid"]
    wait_for(lambda: values(stack, fleet) == {clusters[0]: 1}, timeout=WAIT, what="step 1")
    report(stack, clusters[0], fleet, failed="crash loop")
    view = status_when(root, fleet, "step 2 despite one failure", lambda v: v["step"] == 1)
    assert view["state"] == "Progressing" and view["failed"][0]["cluster"] == clusters[0]
    wait_for(lambda: clusters[1] in values(stack, fleet), timeout=WAIT, what="step 2")
    report(stack, clusters[1], fleet, failed="crash loop")
    view = status_when(root, fleet, "halted", lambda v: v["state"] == "Halted")
    assert [f["cluster"] for f in view["failed"]] == clusters[:2]
    assert "maxFailures" in view["reason"] and clusters[2] not in values(stack, fleet)


def test_a_step_past_its_progress_deadline_halts(stack: Stack, root: Api) -> None:
    site, clusters = _clusters(stack, "dl", 2)
    fleet = create(root, name="deadline", values={"v": 1},
                   selector={"matchLabels": {"site": site}},
                   rollout={"steps": [{"clusters": 1}],
                            "progressDeadlineSeconds": 2})["uuid"]
    view = status_when(root, fleet, "halted at its deadline",
                       lambda v: v["state"] == "Halted")
    assert "no progress" in view["reason"] and clusters[0] in view["reason"]
    assert values(stack, fleet) == {clusters[0]: 1}  # the next step never began


def test_a_closed_window_holds_a_cluster_until_start_now(stack: Stack, root: Api) -> None:
    site, clusters = _clusters(stack, "win", 1)
    r = root.put(f"/v1/maintenance-window/new-year-{site}",
                 json={"selector": {"matchLabels": {"site": site}},
                       "schedule": "0 0 1 1 *", "duration": 3600, "timeZone": "UTC"})
    assert r.status_code in (200, 201), r.text
    fleet = create(root, name="windowed", values={"v": 1},
                   selector={"matchLabels": {"site": site}}, rollout={})["uuid"]
    view = status_when(root, fleet, "waiting", lambda v: v.get("waiting"))
    assert view["waiting"][0]["cluster"] == clusters[0]
    assert view["waiting"][0]["nextWindow"].endswith("-01-01T00:00:00Z")
    assert values(stack, fleet) == {}
    r = root.post(f"/v1/rollout/{fleet}/start-now", json={"clusters": [str(uuid.uuid4())]})
    assert r.status_code == 422 and r.json()["error"].startswith("clusters:"), r.text
    r = root.post(f"/v1/rollout/{fleet}/start-now", json={"clusters": clusters})
    assert r.status_code == 202 and r.json()["clusters"] == clusters, r.text
    wait_for(lambda: values(stack, fleet) == {clusters[0]: 1}, timeout=WAIT,
             what="started now")
    rows = root.get("/v1/audit", params={"limit": "50"}).json()["entries"]
    assert any(r["action"] == "rollout.start-now" and r["target"]["uuid"] == fleet
               for r in rows)
    assert root.delete(f"/v1/maintenance-window/new-year-{site}").status_code in (200, 204)


def test_bad_gates_are_refused_and_nothing_is_written(stack: Stack, root: Api) -> None:
    _, clusters = _clusters(stack, "bad", 1)
    before = stack.admin.get(f"/v2/app/{uuids.App.FleetDeployment}/object").json()
    for rollout, field in (({"maxFailures": -1}, "rollout.maxFailures"),
                           ({"offline": "later"}, "rollout.offline"),
                           ({"onFailure": "retry"}, "rollout.onFailure")):
        r = root.post("/v1/fleet-deployment", json={
            "name": "bad", "chart": member_uuid(clusters[0], clusters[0]),
            "clusters": clusters, "rollout": rollout})
        assert r.status_code == 422 and r.json()["error"].startswith(field), r.text
    assert stack.admin.get(f"/v2/app/{uuids.App.FleetDeployment}/object").json() == before
