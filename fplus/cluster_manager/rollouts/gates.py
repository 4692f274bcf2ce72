"""The health gates of a step (pure), applied by :func:`.rule.advance` on every look.

- **Soak** (``minReadySeconds``): a target counts as done once it has been seen ready,
  without a break, that long (:func:`soaked`); ``Step.soaking`` keeps since when.
- **Failures** (``maxFailures``): every target reporting a failure is listed; the rollout
  fails once there are more than the spec allows (:func:`failures`).
- **Progress deadline** (``progressDeadlineSeconds``): a step that has neither started a
  target nor seen one become ready for that long fails, naming the targets not ready
  (:func:`overdue`). Time spent waiting only for maintenance windows does not count.
- **Offline** (``offline: skip``): a target whose edge stopped reporting is not waited on
  (:func:`skip_offline`); it gets the revision once its edge reports again
  (:func:`catch_up`).
- **Maintenance windows**: a target outside all of its windows is not started (unless an
  operator said start it now), and is listed as waiting with its next opening
  (:func:`hold_for_windows`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from ..model.deployment_state import FAILED, READY
from .state import (
    COMPLETE,
    PROGRESSING,
    Failure,
    RolloutState,
    Skipped,
    Step,
    TargetState,
    Waiting,
    parse_time,
    stamp,
)
from .steps import SKIP, Spec

NOT_REPORTED = TargetState("", None, None)
OFFLINE = "its edge has not reported within the stale threshold"
OUTSIDE = "outside its maintenance windows"


def sooner(*waits: float | None) -> float | None:
    """The earliest of the wake-up times given (None: none)."""
    found = [w for w in waits if w is not None]
    return min(found) if found else None


def ready(step: Step, cluster: str, states: Mapping[str, TargetState]) -> bool:
    """Reported ready, and (if the step changed it) since the step began and since later
    than the report it had when the step changed it (of the revision before: the edges'
    clocks count in seconds, so one of the second the step began is no later)."""
    found = states.get(cluster, NOT_REPORTED)
    if found.state != READY:
        return False
    if cluster not in (step.changed or []):
        return True
    began, at = parse_time(step.begun_at), parse_time(found.since)
    if began is None or at is None or at < began:
        return False
    before = parse_time(step.ready_before.get(cluster))
    return before is None or at > before


def soaked(step: Step, members: Iterable[str], states: Mapping[str, TargetState],
           spec: Spec, now: datetime) -> tuple[set[str], float | None]:
    """The started members done (ready for ``minReadySeconds`` without a break), and
    seconds until the next one would be; records who is soaking since when (only where a
    soak or a deadline needs it: each record is a write of the state)."""
    done: set[str] = set()
    wake: float | None = None
    started = set(step.started or [])
    timed = spec.min_ready > 0 or spec.deadline is not None
    for cluster in members:
        if cluster not in started or not ready(step, cluster, states):
            step.soaking.pop(cluster, None)
            continue
        if not timed:
            done.add(cluster)
            continue
        if cluster not in step.soaking:
            step.soaking[cluster] = stamp(now)
            step.progress_at = stamp(now)
        since = parse_time(step.soaking[cluster]) or now
        left = spec.min_ready - (now - since).total_seconds()
        if left <= 0:
            done.add(cluster)
        else:
            wake = left if wake is None else min(wake, left)
    return done, wake


def failures(state: RolloutState, members: Sequence[str],
             states: Mapping[str, TargetState]) -> list[Failure]:
    """Every failure so far: those of earlier steps as recorded, and the started members of
    the current step reporting one now."""
    mine = set(members)
    earlier = [f for f in state.failed if f["cluster"] not in mine]
    now = [Failure(cluster=c, message=states[c].message or "failed")
           for c in state.current.started or [] if c in mine
           and states.get(c, NOT_REPORTED).state == FAILED]
    return earlier + now


def overdue(step: Step, spec: Spec, now: datetime) -> float | None:
    """Seconds the step is past its progress deadline (None: not past it, or none)."""
    since = parse_time(step.progress_at or step.begun_at)
    if spec.deadline is None or since is None:
        return None
    late = (now - since).total_seconds() - spec.deadline
    return late if late >= 0 else None


def deadline_in(step: Step, spec: Spec, now: datetime) -> float | None:
    """Seconds until the step's progress deadline passes (None: none)."""
    since = parse_time(step.progress_at or step.begun_at)
    if spec.deadline is None or since is None:
        return None
    return max(0.0, spec.deadline - (now - since).total_seconds())


def skip_offline(state: RolloutState, members: Sequence[str], offline: frozenset[str],
                 done: set[str], spec: Spec, now: datetime) -> None:
    """With ``offline: skip``, list the members whose edges are offline and that are not done
    (those already started are marked as given the revision)."""
    if spec.offline != SKIP:
        return
    listed = {s["cluster"] for s in state.skipped}
    started = set(state.current.started or [])
    for cluster in members:
        if cluster in offline and cluster not in listed and cluster not in done:
            entry = Skipped(cluster=cluster, reason=OFFLINE)
            if cluster in started:
                entry["given"] = stamp(now)
            state.skipped.append(entry)


def catch_up(state: RolloutState, offline: frozenset[str], closed: Mapping[str, str | None],
             targets: set[str], now: datetime) -> None:
    """Skipped targets whose edges report again: those of the current step become ordinary
    members again; those of earlier steps (or of a complete rollout) are given the
    revision, inside their maintenance windows."""
    if state.state not in (PROGRESSING, COMPLETE):
        return
    current = set(state.current.clusters) if state.state == PROGRESSING else set()
    kept: list[Skipped] = []
    for entry in state.skipped:
        cluster = entry["cluster"]
        back = "given" not in entry and cluster not in offline and cluster in targets
        if back and cluster in current:
            continue
        if back and (cluster not in closed or cluster in state.start_now):
            entry["given"] = stamp(now)
            _record_start(state, cluster)
        kept.append(entry)
    state.skipped = kept


def _record_start(state: RolloutState, cluster: str) -> None:
    """Note ``cluster`` as started and changed in the step that holds it."""
    for step in state.steps:
        if cluster in step.clusters:
            step.started = [*(step.started or []), cluster]
            step.changed = [*(step.changed or []), cluster]
            return


def hold_for_windows(state: RolloutState, members: Sequence[str],
                     closed: Mapping[str, str | None]) -> set[str]:
    """The members not started yet that must wait for a maintenance window (listed in
    ``state.waiting``, with their next opening)."""
    started = set(state.current.started or [])
    held = {c for c in members if c in closed and c not in started
            and c not in state.start_now}
    state.waiting = []
    for cluster in sorted(held):
        entry = Waiting(cluster=cluster, reason=OUTSIDE)
        opens = closed[cluster]
        if opens is not None:
            entry["nextWindow"] = opens
        state.waiting.append(entry)
    return held


def window_in(state: RolloutState, now: datetime) -> float | None:
    """Seconds until the first waiting target's window opens (None: none waits)."""
    opens = [t for w in state.waiting if (t := parse_time(w.get("nextWindow"))) is not None]
    return max(0.0, (min(opens) - now).total_seconds()) if opens else None
