"""The rule of a rollout (pure): which targets hold the revision, when a step is done, when
the rollout halts. Both kinds (:mod:`.fleet_kind`, :mod:`.cluster_kind`) call
:func:`advance` on every pass with one :class:`Look`, and write the state it answers when it
changed.

A rollout begins when the revision changes: the targets are cut into steps then
(:func:`.steps.plan_steps`). Only the targets of the steps begun get the revision; the
others keep what they have. A step is done when every one of its targets reports ready (a
target the step changed: ready since the step began, by the edge's clock, so a report of the
previous revision does not count); then its pause passes and the next step begins. A target
of the current step reporting a failure halts the rollout, naming it. ``maxUnavailable``
caps how many targets of the step hold the revision and are not ready yet: the step's
targets get it that many at a time. A target that appears during a rollout is in no step:
it gets the revision when the rollout completes. Requests (pause, resume, abort) come through
the entry's ``rolloutRequest`` and are taken once each. Abort and halt leave every target as
it is.
"""

from __future__ import annotations

import copy
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from fplus.jsontypes import Doc

from ..model.deployment_state import FAILED, READY
from .state import (
    ABORTED,
    COMPLETE,
    DONE,
    HALTED,
    PAUSED,
    PROGRESSING,
    WAITING,
    Failure,
    RolloutState,
    StateEntry,
    Step,
    TargetState,
    parse_time,
    same_but_updated,
    stamp,
)
from .steps import MANUAL, Spec, plan_steps

ACTIONS = ("pause", "resume", "abort")
_NOT_REPORTED = TargetState("", None, None)


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


@dataclass(frozen=True)
class Decision:
    """The rollout's next state, the targets that get the revision, and when to look again
    (a timed pause ending), in seconds."""

    state: RolloutState
    new: frozenset[str]
    wake_in: float | None = None

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
    _take_request(state, look.request, look.now)
    wake = _progress(state, look) if state.state == PROGRESSING else None
    if previous is None or not same_but_updated(state.dump(), previous.dump()):
        state.updated_at = stamp(look.now)
    return Decision(state, frozenset(state.updated(set(look.targets))), wake)


def _take_request(state: RolloutState, request: Doc | None,
                  now: datetime) -> None:
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
        state.state, state.failed = PROGRESSING, []
        if step.state == DONE:  # a manual pause after the step: on to the next
            _next_step(state, now)
        elif step.state == HALTED:
            step.state = PROGRESSING
    elif action == "abort" and state.state not in (COMPLETE, ABORTED):
        state.state = ABORTED


def _next_step(state: RolloutState, now: datetime) -> None:
    state.step += 1
    state.current.state, state.current.begun_at = PROGRESSING, stamp(now)


def _ready(step: Step, cluster: str, states: Mapping[str, TargetState]) -> bool:
    """Reported ready, and (if the step changed it) since the step began."""
    found = states.get(cluster, _NOT_REPORTED)
    if found.state != READY:
        return False
    if cluster not in (step.changed or []):
        return True
    began, at = parse_time(step.begun_at), parse_time(found.since)
    return began is not None and at is not None and at >= began


def _start(step: Step, members: list[str], room: int, current: frozenset[str]) -> None:
    """Give the revision to up to ``room`` members not started yet."""
    started = step.started if step.started is not None else []
    step.started = started
    for cluster in members:
        if room <= 0:
            return
        if cluster not in started:
            started.append(cluster)
            if cluster not in current:
                step.changed = [*(step.changed or []), cluster]
            room -= 1


def _progress(state: RolloutState, look: Look) -> float | None:
    """Move a Progressing rollout on as far as it can go now; seconds until a pause ends."""
    targets, states, now = set(look.targets), look.states, look.now
    while True:
        index, step = state.step, state.current
        members = [c for c in step.clusters if c in targets]
        pause = look.spec.pause(index)
        if step.state == WAITING:
            ends = (parse_time(step.ready_at) or now).timestamp() + float(pause or 0)
            if now.timestamp() < ends:
                return ends - now.timestamp()
            step.state = DONE
            _next_step(state, now)
            continue
        busy = [c for c in step.started or [] if c in targets and not _ready(step, c, states)]
        _start(step, members, look.spec.limit(len(members)) - len(busy), look.current)
        started = step.started or []
        failed = [Failure(cluster=c, message=states[c].message or "failed")
                  for c in started if c in targets
                  and states.get(c, _NOT_REPORTED).state == FAILED]
        if failed:
            state.state, state.failed, step.state = HALTED, failed, HALTED
            return None
        if any(c not in started or not _ready(step, c, states) for c in members):
            return None
        if index == len(state.steps) - 1:
            step.state, state.state = DONE, COMPLETE
            return None
        if pause == MANUAL:
            step.state, state.state = DONE, PAUSED
            return None
        if pause:
            step.state, step.ready_at = WAITING, stamp(now)
            continue
        step.state = DONE
        _next_step(state, now)

