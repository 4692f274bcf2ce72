"""Paced rollouts as pure functions: the steps, the order, pauses, halts, requests, the
rollout field's refusals, and the expansion writing only the clusters of the steps begun."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fplus.cluster_manager.rollouts.fleet_entry import member_uuid, request_errors, revision
from fplus.cluster_manager.rollouts.fleet_expansion import expand
from fplus.cluster_manager.rollouts.rule import Decision, Look, advance
from fplus.cluster_manager.rollouts.state import RolloutState
from fplus.cluster_manager.rollouts.state import TargetState as State
from fplus.cluster_manager.rollouts.steps import Spec, plan_steps
from fplus.cluster_manager.rollouts.steps import spec_errors as rollout_errors

NOW = datetime(2026, 1, 1, tzinfo=UTC)
F = str(uuid.UUID(int=20))
CHART = str(uuid.UUID(int=1))
NINE = [str(uuid.UUID(int=100 + n)) for n in range(9)]
LABELS = {c: {"ring": str(n % 3)} for n, c in enumerate(NINE)}
SINCE = "2026-01-01T00:00:00Z"
READY = State("ready", None, SINCE)
FAILED = State("failed", "install failed", None)
UNKNOWN = State("unknown", None, None)
STALE = State("ready", None, "2025-12-31T23:59:00Z")


def look(spec: dict[str, Any], previous: dict[str, Any] | None,
         states: dict[str, State],
         request: dict[str, Any] | None = None, now: datetime = NOW,
         current: frozenset[str] = frozenset(), rev: str = "rev1") -> Decision:
    return advance(Look(F, Spec.parse(spec), rev, NINE, LABELS, RolloutState.parse(previous),
                        states, now, request, current))


def steps(spec: dict[str, Any]) -> list[list[str]]:
    return plan_steps(Spec.parse(spec), NINE, LABELS)


def test_steps_by_count_percent_and_selector_the_rest_last() -> None:
    assert steps({"steps": [{"clusters": 3}, {"clusters": "34%"}]}) == [
        NINE[:3], NINE[3:6], NINE[6:]]
    by_ring = steps({"steps": [{"clusters": {"matchLabels": {"ring": "0"}}}]})
    assert by_ring == [NINE[0::3], [c for c in NINE if c not in NINE[0::3]]]
    assert steps({}) == [NINE]
    assert steps({"steps": [{"clusters": "1%"}]})[0] == NINE[:1]


def test_a_step_waits_for_ready_then_the_next_begins_then_complete() -> None:
    spec = {"steps": [{"clusters": 3}, {"clusters": 3}]}
    first = look(spec, None, {})
    assert first.new == set(NINE[:3])
    assert first.status["state"] == "Progressing" and first.status["step"] == 0
    assert [s["clusters"] for s in first.status["steps"]] == [NINE[:3], NINE[3:6], NINE[6:]]
    partly = look(spec, first.status, {NINE[0]: READY, NINE[1]: READY})
    assert partly.new == set(NINE[:3]) and partly.status == first.status
    second = look(spec, first.status, dict.fromkeys(NINE[:3], READY))
    assert second.new == set(NINE[:6]) and second.status["step"] == 1
    assert second.status["steps"][0]["state"] == "Done"
    done = look(spec, second.status, dict.fromkeys(NINE, READY))
    assert done.status["state"] == "Complete" and done.new == set(NINE)


def test_a_ready_report_from_before_the_step_counts_only_where_nothing_changed() -> None:
    spec = {"steps": [{"clusters": 3}]}
    first = look(spec, None, {}, current=frozenset(NINE[:2]))
    assert first.status["steps"][0]["changed"] == [NINE[2]]
    stale = look(spec, first.status, dict.fromkeys(NINE[:3], STALE))
    assert stale.status == first.status and stale.new == set(NINE[:3])
    fresh = look(spec, first.status, dict.fromkeys(NINE[:2], STALE) | {NINE[2]: READY})
    assert fresh.status["step"] == 1 and fresh.new == set(NINE)


def test_a_failure_halts_naming_the_cluster_and_resume_retries() -> None:
    spec = {"steps": [{"clusters": 3}]}
    first = look(spec, None, {})
    halted = look(spec, first.status, {NINE[0]: READY, NINE[1]: FAILED})
    assert halted.status["state"] == "Halted"
    assert halted.status["failed"] == [{"cluster": NINE[1], "message": "install failed"}]
    assert halted.new == set(NINE[:3])
    still = look(spec, halted.status, dict.fromkeys(NINE[:3], READY))
    assert still.status["state"] == "Halted" and still.new == set(NINE[:3])
    resume = {"action": "resume", "rolloutId": first.status["rolloutId"], "at": "1"}
    resumed = look(spec, halted.status, dict.fromkeys(NINE[:3], READY), resume)
    assert resumed.status["state"] == "Progressing" and resumed.status["failed"] == []
    assert resumed.new == set(NINE)  # the rest is the last step


def test_a_manual_pause_waits_for_resume_and_a_timed_one_for_its_seconds() -> None:
    spec = {"steps": [{"clusters": 3, "pause": "manual"}, {"clusters": 3, "pause": 60}]}
    first = look(spec, None, {})
    paused = look(spec, first.status, dict.fromkeys(NINE[:3], READY))
    assert paused.status["state"] == "Paused" and paused.new == set(NINE[:3])
    assert look(spec, paused.status, dict.fromkeys(NINE, READY)).new == set(NINE[:3])
    resume = {"action": "resume", "rolloutId": first.status["rolloutId"], "at": "t1"}
    resumed = look(spec, paused.status, dict.fromkeys(NINE[:3], READY), resume)
    assert resumed.new == set(NINE[:6]) and resumed.status["step"] == 1
    again = look(spec, resumed.status, dict.fromkeys(NINE[:3], READY), resume)
    assert again.status == resumed.status  # a request is taken once
    waiting = look(spec, resumed.status, dict.fromkeys(NINE, READY))
    assert waiting.new == set(NINE[:6]) and waiting.wake_in == pytest.approx(60)
    later = look(spec, waiting.status, dict.fromkeys(NINE, READY),
                 now=NOW + timedelta(seconds=61))
    assert later.new == set(NINE) and later.status["step"] == 2


def test_pause_and_abort_requests_stop_where_it_is() -> None:
    spec = {"steps": [{"clusters": 3}]}
    first = look(spec, None, {})
    rid = first.status["rolloutId"]
    paused = look(spec, first.status, dict.fromkeys(NINE[:3], READY),
                  {"action": "pause", "rolloutId": rid, "at": "1"})
    assert paused.status["state"] == "Paused" and paused.new == set(NINE[:3])
    aborted = look(spec, paused.status, dict.fromkeys(NINE, READY),
                   {"action": "abort", "rolloutId": rid, "at": "2"})
    assert aborted.status["state"] == "Aborted" and aborted.new == set(NINE[:3])
    stale = look(spec, aborted.status, {}, {"action": "resume", "rolloutId": "old", "at": "3"})
    assert stale.status["state"] == "Aborted"


def test_max_unavailable_starts_that_many_at_a_time() -> None:
    spec = {"maxUnavailable": 1, "steps": [{"clusters": 3}]}
    first = look(spec, None, {})
    assert first.new == {NINE[0]}
    second = look(spec, first.status, {NINE[0]: READY})
    assert second.new == {NINE[0], NINE[1]}
    assert look(spec, second.status, {NINE[0]: READY, NINE[1]: UNKNOWN}).new == set(NINE[:2])


def test_a_new_revision_begins_a_new_rollout() -> None:
    spec = {"steps": [{"clusters": 3}]}
    done = look(spec, look(spec, None, {}).status, dict.fromkeys(NINE, READY))
    other = look(spec, done.status, {}, rev="rev2")
    assert other.status["revision"] == "rev2" and other.new == set(NINE[:3])
    assert other.status["rolloutId"] != done.status["rolloutId"]
    assert revision({"name": "a", "values": {}}) == revision({"name": "a"})
    assert revision({"name": "a", "values": {"x": 1}}) != revision({"name": "a"})


@pytest.mark.parametrize(("rollout", "field"), [
    ([], "rollout"),
    ({"maxUnavailable": 0}, "rollout.maxUnavailable"),
    ({"maxUnavailable": "101%"}, "rollout.maxUnavailable"),
    ({"steps": [{"clusters": "x"}]}, "rollout.steps[0].clusters"),
    ({"steps": [{"clusters": 2, "pause": "later"}]}, "rollout.steps[0].pause"),
    ({"steps": [{"clusters": {"matchLabels": {"bad key!": "v"}}}]},
     "rollout.steps[0].clusters.matchLabels.bad key!"),
    ({"steps": [{"pause": 1}]}, "rollout.steps[0]"),
    ({"other": 1}, "rollout"),
])
def test_bad_rollouts_are_refused_naming_the_field(rollout: Any, field: str) -> None:
    assert field in rollout_errors(rollout)
    body = {"name": "x", "chart": CHART, "selector": {}, "rollout": rollout}
    assert field in request_errors(body)


def test_the_expansion_writes_only_the_begun_steps_and_keeps_the_others() -> None:
    configs = {c: {"name": f"c{n}", "labels": LABELS[c]} for n, c in enumerate(NINE)}
    old = {"name": "app", "chart": CHART, "selector": {}, "values": {"v": 1},
           "createdAt": "2026"}
    first = expand({F: old}, configs, {})
    deployments = {d.uuid: d.entry() for d, _ in first.writes}
    assert len(deployments) == 9
    new = old | {"values": {"v": 2}, "rollout": {"steps": [{"clusters": 3}, {"clusters": 3}]}}
    plan = expand({F: new}, configs, deployments, rollouts={}, edges={}, now=NOW)
    assert {d.cluster for d, _ in plan.writes} == set(NINE[:3])
    assert all(d.values == {"v": 2} for d, _ in plan.writes) and plan.removals == []
    status = plan.rollouts[F]
    assert status["state"] == "Progressing" and status["step"] == 0
    # before the writes land, an old "ready" report does not count
    stale_edges = {c: _ready_report(member_uuid(F, c)) for c in NINE}
    again = expand({F: new}, configs, deployments, rollouts={F: status}, edges=stale_edges,
                   now=NOW)
    assert F not in again.rollouts
    for d, _ in plan.writes:
        deployments[d.uuid] = d.entry()
    old_edges = {c: _ready_report(member_uuid(F, c), "2025-01-01T00:00:00Z") for c in NINE}
    assert F not in expand({F: new}, configs, deployments, rollouts={F: status},
                           edges=old_edges, now=NOW).rollouts
    moved = expand({F: new}, configs, deployments, rollouts={F: status}, edges=stale_edges,
                   now=NOW)
    assert {d.cluster for d, _ in moved.writes} == set(NINE[3:6])
    assert moved.rollouts[F]["step"] == 1
    gone = expand({}, configs, deployments, rollouts={F: status}, edges={}, now=NOW)
    assert gone.rollout_removals == [F]
    # without the rollout inputs (the API's reads) every target gets the revision
    assert len(expand({F: new}, configs, deployments).writes) == 6


def test_a_report_of_the_revision_before_made_in_the_second_the_step_began_does_not_count(
        ) -> None:
    """The edges' clocks count in seconds: the ready report a cluster had when the step
    changed it is of its previous revision even if it is of the second the step began (a
    change made right after a rollout completed); a later one counts."""
    configs = {c: {"name": f"c{n}", "labels": LABELS[c]} for n, c in enumerate(NINE)}
    old = {"name": "app", "chart": CHART, "selector": {}, "values": {"v": 1},
           "createdAt": "2026", "rollout": {"steps": [{"clusters": 3}],
                                            "onFailure": "rollback"}}
    deployments = {d.uuid: d.entry() for d, _ in expand({F: old}, configs, {}).writes}
    edges = {c: _ready_report(member_uuid(F, c)) for c in NINE}  # ready since NOW
    complete = expand({F: old}, configs, deployments, rollouts={}, edges=edges, now=NOW)
    assert complete.rollouts[F]["state"] == "Complete" and not complete.writes
    new = old | {"values": {"v": 2}}
    began = expand({F: new}, configs, deployments, rollouts=complete.rollouts, edges=edges,
                   now=NOW + timedelta(milliseconds=300))
    assert {d.cluster for d, _ in began.writes} == set(NINE[:3])
    assert began.rollouts[F]["steps"][0]["begunAt"] == SINCE
    for d, _ in began.writes:
        deployments[d.uuid] = d.entry()
    stale = expand({F: new}, configs, deployments, rollouts=began.rollouts, edges=edges,
                   now=NOW + timedelta(milliseconds=600))
    assert F not in stale.rollouts and not stale.writes  # still step 1, NINE[3:] keep v1
    crashed = edges | {NINE[1]: {"deployments": {"releases": [], "failed": [
        {"uuid": member_uuid(F, NINE[1]), "error": "the new version crashes"}]}}}
    rolled = expand({F: new}, configs, deployments, rollouts=began.rollouts, edges=crashed,
                    now=NOW + timedelta(milliseconds=900))
    assert rolled.rollouts[F]["state"] == "RolledBack"
    assert {d.cluster for d, _ in rolled.writes} == set(NINE[:3])  # v1 back
    fresh = edges | {c: _ready_report(member_uuid(F, c), "2026-01-01T00:00:01Z")
                     for c in NINE[:3]}
    moved = expand({F: new}, configs, deployments, rollouts=began.rollouts, edges=fresh,
                   now=NOW + timedelta(seconds=1))
    assert moved.rollouts[F]["step"] == 1  # the rest, the last step, begins
    assert {d.cluster for d, _ in moved.writes} == set(NINE[3:])


def _ready_report(member: str, since: str = SINCE) -> dict[str, Any]:
    release = f"chart-{member}"
    return {"deployments": {"releases": [release], "failed": []},
            "flux": {"objects": [{"kind": "HelmRelease", "namespace": "n", "name": release,
                                  "ready": "True", "since": since}]}}
