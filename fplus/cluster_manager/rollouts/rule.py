"""The rule of a rollout (pure): which targets hold the revision, when a step is done, when
the rollout halts or rolls back. Both kinds (:mod:`.fleet_kind`, :mod:`.cluster_kind`) call
:func:`advance` on every pass with one :class:`Look`, and write the state it answers when it
changed.

A rollout begins when the revision changes: the targets are cut into steps then
(:func:`.steps.plan_steps`). Only the targets of the steps begun get the revision; the
others keep what they have. A step is done when every one of its targets is done: ready
(a target the step changed: ready since the step began, by the edge's clock, so a report of
the previous revision does not count) for ``minReadySeconds``, or failed within
``maxFailures``, or skipped (its edge offline, ``offline: skip``); then its pause passes and
the next step begins. More failures than ``maxFailures``, or a step past its
``progressDeadlineSeconds``, halts the rollout naming the targets (``onFailure: rollback``:
rolls it back instead). ``maxUnavailable`` caps how many targets of the step hold the
revision and are not done yet. A target outside its maintenance windows waits (unless an
operator starts it now). A target that appears during a rollout is in no step: it gets the
revision when the rollout completes. Requests (pause, resume, abort, rollback, start-now)
come through the entry's ``rolloutRequest`` and are taken once each. Abort and halt leave
every target as it is; a rollback returns every target the rollout changed
(:attr:`Decision.restore`) to what it had (the kinds know what that was). The gates
themselves are :mod:`.gates`.
"""

from __future__ import annotations

import copy
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from fplus.jsontypes import Doc

from . import gates
from .state import (
    ABORTED,
    COMPLETE,
    DONE,
    HALTED,
    PAUSED,
    PROGRESSING,
    ROLLED_BACK,
    WAITING,
    RolloutState,
    StateEntry,
    Step,
    TargetState,
    parse_time,
    same_but_updated,
    stamp,
)
from .steps import MANUAL, ROLLBACK, Spec, plan_steps

ACTIONS = ("pause", "resume", "abort", "rollback", "start-now")
CANNOT_ROLL_BACK = "cannot roll back: what the clusters had before is not recorded"


@dataclass(frozen=True)
class Look:
    """Everything one look at a rollout rests on."""

    rollout: str
    """The rollout's uuid (a fleet deployment's, or a cluster rollout's)."""
    spec: Spec
    revision: str
    targets: Sequence[str]
    labels: Mapping[str, Mapping[str, str]]
    previous: RolloutState | None
    """The stored state (None: none yet)."""
    states: Mapping[str, TargetState]
    now: datetime
    request: Doc | None = None
    """The entry's ``rolloutRequest``."""
    current: frozenset[str] = field(default_factory=frozenset)
    """The targets already holding the revision (a step starting them changes nothing)."""
    offline: frozenset[str] = field(default_factory=frozenset)
    """The targets whose edges have not reported within the stale threshold."""
    closed: Mapping[str, str | None] = field(default_factory=dict)
    """The targets outside every maintenance window that matches them -> when the next one
    opens (a stamp; None: unknown)."""
    can_roll_back: bool = True
    """Whether the kind knows what the changed targets had before."""
    reported: Mapping[str, str] = field(default_factory=dict)
    """The targets whose edges report them ready -> since when, whatever they hold (for a
    target a step changes: the report of what it had before, see ``Step.ready_before``)."""


@dataclass(frozen=True)
class Decision:
    """The rollout's next state, the targets that get the revision, and when to look again
    (a timed pause ending), in seconds."""

    state: RolloutState
    new: frozenset[str]
    wake_in: float | None = None
    restore: frozenset[str] = frozenset()
    """The targets to return to what they had (a rolled back rollout's changed ones)."""

    @property
    def status(self) -> StateEntry:
        """The state as its entry is written."""
        return self.state.dump()


def begin(look: Look) -> RolloutState:
    """The state of a rollout of ``look.revision`` starting now."""
    steps = [Step(c) for c in plan_steps(look.spec, look.targets, look.labels)]
    steps[0].state, steps[0].begun_at = PROGRESSING, stamp(look.now)
    at = stamp(look.now)
    return RolloutState(str(uuidlib.uuid5(uuidlib.NAMESPACE_URL,
                                          f"{look.rollout}/{look.revision}/{at}")),
                        look.revision, PROGRESSING, steps, started_at=at, updated_at=at)


def advance(look: Look) -> Decision:
    """One look at a rollout: its next state (``updatedAt`` moved only if it changed)."""
    previous = look.previous
    if previous is None or previous.revision != look.revision:
        state = begin(look)
    else:
        state = copy.deepcopy(previous)
    _take_request(state, look)
    wake = None
    gates.catch_up(state, look.offline, look.closed, set(look.targets), look.now)
    if state.state == PROGRESSING:
        wake = _progress(state, look)
    if previous is None or not same_but_updated(state.dump(), previous.dump()):
        state.updated_at = stamp(look.now)
    restore = frozenset(state.rolled_back or []) if state.state == ROLLED_BACK else frozenset()
    return Decision(state, frozenset(state.updated(set(look.targets))), wake, restore)


def _take_request(state: RolloutState, look: Look) -> None:
    request, now = look.request, look.now
    if not isinstance(request, Mapping) or request.get("rolloutId") != state.rollout_id:
        return
    at = None if request.get("at") is None else str(request["at"])
    if at == state.request:
        return
    state.request = at
    action, step = request.get("action"), state.current
    if action == "pause" and state.state == PROGRESSING:
        state.state = PAUSED
    elif action == "resume" and state.state in (PAUSED, HALTED):
        state.state, state.reason = PROGRESSING, None
        state.failed = [f for f in state.failed if f["cluster"] not in step.clusters]
        step.progress_at = stamp(now) if step.progress_at else None
        if step.state == DONE:  # a manual pause after the step: on to the next
            _next_step(state, now)
        elif step.state == HALTED:
            step.state = PROGRESSING
    elif action == "abort" and state.state not in (COMPLETE, ABORTED, ROLLED_BACK):
        state.state = ABORTED
    elif action == "rollback" and state.state not in (COMPLETE, ROLLED_BACK):
        _fail(state, look, "rolled back on request", rollback=True)
    elif action == "start-now" and state.state not in (COMPLETE, ABORTED, ROLLED_BACK):
        wanted = request.get("clusters")
        asked = [str(c) for c in wanted] if isinstance(wanted, list) else []
        state.start_now += [c for c in asked if c in look.targets
                            and c not in state.start_now]


def _fail(state: RolloutState, look: Look, reason: str, rollback: bool = False) -> None:
    """Halt the rollout for ``reason``, or roll it back (asked, or ``onFailure``)."""
    if not (rollback or look.spec.on_failure == ROLLBACK):
        state.state, state.reason, state.current.state = HALTED, reason, HALTED
    elif not look.can_roll_back:
        state.state, state.current.state = HALTED, HALTED
        state.reason = f"{reason}; {CANNOT_ROLL_BACK}"
    else:
        state.state, state.reason = ROLLED_BACK, reason
        state.rolled_back = sorted(set(state.changed()))
        state.waiting = []


def _next_step(state: RolloutState, now: datetime) -> None:
    state.current.soaking = {}
    state.step += 1
    step = state.current
    step.state, step.begun_at = PROGRESSING, stamp(now)


def _start(step: Step, members: list[str], room: int, look: Look, deadline: bool) -> None:
    """Give the revision to up to ``room`` members (those startable, in order); of those it
    changes, note the ready report they have now (of what they had before)."""
    current, now = look.current, look.now
    started = step.started if step.started is not None else []
    step.started = started
    for cluster in members:
        if room <= 0:
            return
        if cluster not in started:
            started.append(cluster)
            if deadline:
                step.progress_at = stamp(now)
            if cluster not in current:
                step.changed = [*(step.changed or []), cluster]
                if (since := look.reported.get(cluster)) is not None:
                    step.ready_before[cluster] = since
            room -= 1


def _progress(state: RolloutState, look: Look) -> float | None:
    """Move a Progressing rollout on as far as it can go now; seconds until it should be
    looked at again (a pause, a soak, a deadline or a window)."""
    targets, states, now, spec = set(look.targets), look.states, look.now, look.spec
    while True:
        index, step = state.step, state.current
        members = [c for c in step.clusters if c in targets]
        pause = spec.pause(index)
        if step.state == WAITING:
            ends = (parse_time(step.ready_at) or now).timestamp() + float(pause or 0)
            if now.timestamp() < ends:
                return ends - now.timestamp()
            step.state = DONE
            _next_step(state, now)
            continue
        done, soak = gates.soaked(step, members, states, spec, now)
        state.failed = gates.failures(state, members, states)
        failed = {f["cluster"] for f in state.failed}
        gates.skip_offline(state, members, look.offline, done | failed, spec, now)
        skipped = {s["cluster"] for s in state.skipped}
        held = gates.hold_for_windows(state, members, look.closed)
        busy = [c for c in step.started or [] if c in targets
                and c not in done | failed | skipped]
        startable = [c for c in members if c not in skipped | held]
        _start(step, startable, spec.limit(len(members)) - len(busy), look,
               spec.deadline is not None)
        done, soak = gates.soaked(step, members, states, spec, now)  # the new ones too
        state.failed = gates.failures(state, members, states)
        failed = {f["cluster"] for f in state.failed}
        if len(state.failed) > spec.failures_allowed(len(targets)):
            _fail(state, look, f"{len(state.failed)} clusters failed, more than maxFailures "
                               f"allows: {', '.join(sorted(failed))}")
            return None
        pending = [c for c in members if c not in done | failed | skipped]
        if pending:
            if set(pending) <= held and spec.deadline is not None:
                step.progress_at = stamp(now)  # only windows hold it up: no deadline runs
            if gates.overdue(step, spec, now) is not None:
                _fail(state, look, f"step {index + 1} made no progress in "
                                   f"{spec.deadline:.0f} s; not ready: "
                                   f"{', '.join(sorted(set(pending) - held))}")
                return None
            return gates.sooner(soak, gates.deadline_in(step, spec, now),
                           gates.window_in(state, now))
        state.waiting = []
        if index == len(state.steps) - 1:
            step.state, state.state, step.soaking = DONE, COMPLETE, {}
            return None
        if pause == MANUAL:
            step.state, state.state = DONE, PAUSED
            return None
        if pause:
            step.state, step.ready_at = WAITING, stamp(now)
            continue
        step.state = DONE
        _next_step(state, now)

