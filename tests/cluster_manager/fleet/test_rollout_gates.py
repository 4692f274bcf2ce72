"""The health gates and rollback of the rollout rule, as pure functions: soak
(``minReadySeconds``), ``maxFailures``, ``progressDeadlineSeconds``, ``offline: skip``,
maintenance windows with start-now, and ``onFailure: rollback`` / the rollback request."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from fplus.cluster_manager.rollouts.rule import Decision, Look, advance
from fplus.cluster_manager.rollouts.state import RolloutState
from fplus.cluster_manager.rollouts.steps import Spec
from fplus.cluster_manager.rollouts.steps import spec_errors as rollout_errors
from tests.cluster_manager.fleet.test_rollout import FAILED, LABELS, NINE, NOW, READY, F
from tests.cluster_manager.fleet.test_rollout import State as TargetState

THREE = {"steps": [{"clusters": 3}, {"clusters": 3}]}


def look(spec: dict[str, Any], previous: dict[str, Any] | None,
         states: dict[str, TargetState], *, now: Any = NOW,
         request: dict[str, Any] | None = None, offline: frozenset[str] = frozenset(),
         closed: dict[str, str | None] | None = None, can_roll_back: bool = True) -> Decision:
    return advance(Look(F, Spec.parse(spec), "rev1", NINE, LABELS,
                        RolloutState.parse(previous), states, now, request,
                        offline=offline, closed=closed or {}, can_roll_back=can_roll_back))


def at(seconds: float) -> Any:
    return NOW + timedelta(seconds=seconds)


def ask(decision: Decision, action: str, when: str, **more: Any) -> dict[str, Any]:
    return {"action": action, "rolloutId": decision.status["rolloutId"], "at": when} | more


def test_min_ready_seconds_waits_for_a_soak_without_a_break() -> None:
    spec = THREE | {"minReadySeconds": 60}
    first = look(spec, None, {})
    ready = dict.fromkeys(NINE[:3], READY)
    soaking = look(spec, first.status, ready, now=at(10))
    assert soaking.status["step"] == 0 and soaking.wake_in == pytest.approx(60)
    broken = look(spec, soaking.status, ready | {NINE[0]: TargetState("progressing", None,
                                                                      None)}, now=at(40))
    assert NINE[0] not in broken.status["steps"][0]["soaking"]
    again = look(spec, broken.status, ready, now=at(50))
    assert look(spec, again.status, ready, now=at(80)).status["step"] == 0  # 30 s since break
    done = look(spec, again.status, ready, now=at(111))
    assert done.status["step"] == 1 and done.new == set(NINE[:6])


def test_max_failures_tolerates_that_many_then_halts_listing_them() -> None:
    spec = THREE | {"maxFailures": 1}
    first = look(spec, None, {})
    one = look(spec, first.status, {NINE[0]: FAILED, NINE[1]: READY, NINE[2]: READY})
    assert one.status["state"] == "Progressing" and one.status["step"] == 1
    assert [f["cluster"] for f in one.status["failed"]] == [NINE[0]]
    two = look(spec, one.status, {NINE[0]: FAILED, NINE[3]: FAILED})
    assert two.status["state"] == "Halted"
    assert [f["cluster"] for f in two.status["failed"]] == [NINE[0], NINE[3]]
    assert NINE[3] in two.status["reason"] and "maxFailures" in two.status["reason"]
    percent = THREE | {"maxFailures": "25%"}  # 2 of 9
    assert look(percent, look(percent, None, {}).status,
                {NINE[0]: FAILED, NINE[1]: FAILED}).status["state"] == "Progressing"


def test_a_step_without_progress_past_its_deadline_halts_naming_who_is_not_ready() -> None:
    spec = THREE | {"progressDeadlineSeconds": 300}
    first = look(spec, None, {})
    partly = look(spec, first.status, {NINE[0]: READY}, now=at(100))
    assert partly.wake_in == pytest.approx(300)  # progress at 100 s: the clock restarts
    still = look(spec, partly.status, {NINE[0]: READY}, now=at(399))
    assert still.status["state"] == "Progressing"
    late = look(spec, partly.status, {NINE[0]: READY}, now=at(401))
    assert late.status["state"] == "Halted"
    assert NINE[1] in late.status["reason"] and NINE[0] not in late.status["reason"]


def test_offline_edges_are_waited_on_or_skipped_then_caught_up() -> None:
    away = frozenset({NINE[1]})
    waits = look(THREE, look(THREE, None, {}).status,
                 {NINE[0]: READY, NINE[2]: READY}, offline=away)
    assert waits.status["step"] == 0 and "skipped" not in waits.status
    spec = THREE | {"offline": "skip"}
    first = look(spec, None, {}, offline=away)
    assert NINE[1] not in first.new
    assert first.status["skipped"] == [{"cluster": NINE[1], "reason": first.status[
        "skipped"][0]["reason"]}]
    on = look(spec, first.status, {NINE[0]: READY, NINE[2]: READY}, offline=away)
    assert on.status["step"] == 1 and NINE[1] not in on.new
    done = look(spec, on.status, dict.fromkeys(NINE, READY), offline=away)
    assert done.status["state"] == "Complete" and done.new == set(NINE) - away
    back = look(spec, done.status, dict.fromkeys(NINE, READY))
    assert back.new == set(NINE) and "given" in back.status["skipped"][0]


def test_windows_hold_clusters_until_open_and_start_now_overrides() -> None:
    closed: dict[str, str | None] = {NINE[0]: "2026-01-01T22:00:00Z"}
    first = look(THREE, None, {}, closed=closed)
    assert first.new == set(NINE[1:3])
    assert first.status["waiting"] == [{"cluster": NINE[0], "reason": first.status[
        "waiting"][0]["reason"], "nextWindow": "2026-01-01T22:00:00Z"}]
    assert first.wake_in == pytest.approx(22 * 3600)
    held = look(THREE, first.status, dict.fromkeys(NINE[1:3], READY), closed=closed)
    assert held.status["step"] == 0
    now = look(THREE, held.status, dict.fromkeys(NINE[1:3], READY), closed=closed,
               request=ask(first, "start-now", "1", clusters=[NINE[0]]))
    assert NINE[0] in now.new and now.status["startNow"] == [NINE[0]]
    opened = look(THREE, held.status, dict.fromkeys(NINE[1:3], READY))
    assert NINE[0] in opened.new


def test_on_failure_rollback_restores_every_changed_cluster() -> None:
    spec = THREE | {"onFailure": "rollback"}
    first = look(spec, None, {})
    on = look(spec, first.status, dict.fromkeys(NINE[:3], READY))
    failed = look(spec, on.status, {NINE[3]: FAILED})
    assert failed.status["state"] == "RolledBack" and failed.new == frozenset()
    assert failed.restore == set(NINE[:6]) and NINE[3] in failed.status["reason"]
    assert look(spec, failed.status, {}).restore == set(NINE[:6])  # kept until a new revision
    cannot = look(spec, on.status, {NINE[3]: FAILED}, can_roll_back=False)
    assert cannot.status["state"] == "Halted" and "cannot roll back" in cannot.status["reason"]


def test_a_rollback_request_rolls_back_a_halted_rollout_but_not_a_complete_one() -> None:
    first = look(THREE, None, {})
    halted = look(THREE, first.status, {NINE[0]: FAILED})
    assert halted.status["state"] == "Halted"
    back = look(THREE, halted.status, {}, request=ask(first, "rollback", "1"))
    assert back.status["state"] == "RolledBack" and back.restore == set(NINE[:3])
    done = look({}, look({}, None, {}).status, dict.fromkeys(NINE, READY))
    kept = look({}, done.status, {}, request=ask(done, "rollback", "1"))
    assert kept.status["state"] == "Complete" and kept.restore == frozenset()


@pytest.mark.parametrize(("rollout", "field"), [
    ({"minReadySeconds": -1}, "rollout.minReadySeconds"),
    ({"progressDeadlineSeconds": 0}, "rollout.progressDeadlineSeconds"),
    ({"maxFailures": -1}, "rollout.maxFailures"),
    ({"maxFailures": "x%"}, "rollout.maxFailures"),
    ({"offline": "maybe"}, "rollout.offline"),
    ({"onFailure": "retry"}, "rollout.onFailure"),
    ({"minReadySeconds": 600, "progressDeadlineSeconds": 300},
     "rollout.progressDeadlineSeconds"),
])
def test_bad_gates_are_refused_naming_the_field(rollout: Any, field: str) -> None:
    assert field in rollout_errors(rollout)


def test_good_gates_are_taken() -> None:
    assert rollout_errors({"minReadySeconds": 0, "maxFailures": "0%", "offline": "skip",
                           "progressDeadlineSeconds": 600, "onFailure": "rollback"}) == {}
