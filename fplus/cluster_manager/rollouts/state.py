"""A rollout's state, typed: parsed once from its entry in the rollout status app, written
back once (:meth:`RolloutState.dump`).

The entry is ``{rolloutId, revision, state, step, steps: [{clusters, state, begunAt?,
started?, changed?, readyBefore?, readyAt?, soaking?, progressAt?}], failed: [{cluster,
message}], startedAt, updatedAt, request?, reason?, skipped?, waiting?, startNow?,
rolledBack?}``; a cluster rollout's adds ``kind: "cluster"``, ``baseline``, ``before`` (what
each started cluster had) and (a template's) ``promoted``; a fleet deployment's ``spec`` (its
revision's chart, values and overrides) and ``previous`` (``{spec}``: the one before, null
for none). Only the leader writes it, so a new leader resumes where the last one left it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple, NotRequired, TypedDict, cast

from fplus.config_store import uuids
from fplus.jsontypes import JsonObject, as_list, is_object, text

ROLLOUT_APP = uuids.App.FleetRolloutStatus
PROGRESSING, PAUSED, HALTED, ABORTED, COMPLETE, ROLLED_BACK = (
    "Progressing", "Paused", "Halted", "Aborted", "Complete", "RolledBack")
PENDING, WAITING, DONE = "Pending", "Waiting", "Done"
"""Step states besides Progressing: not begun, ready and pausing, ready and over."""
FINISHED = (COMPLETE, ABORTED, ROLLED_BACK)


class TargetState(NamedTuple):
    """One target's word on the revision: its state (ready, progressing, failed, unknown),
    why, and since when it is ready (the edge's clock)."""

    state: str
    message: str | None
    since: str | None


class Failure(TypedDict):
    """A target of the current step reporting a failure."""

    cluster: str
    message: str


class Skipped(TypedDict):
    """A target left out because its edge stopped reporting (``offline: skip``); ``given``:
    when it got the revision after its edge reported again."""

    cluster: str
    reason: str
    given: NotRequired[str]


class Waiting(TypedDict):
    """A target of the current step waiting for one of its maintenance windows."""

    cluster: str
    reason: str
    nextWindow: NotRequired[str]


class StepEntry(TypedDict):
    """A step as its state entry stores it."""

    clusters: list[str]
    state: str
    begunAt: NotRequired[str]
    started: NotRequired[list[str]]
    changed: NotRequired[list[str]]
    readyBefore: NotRequired[dict[str, str]]
    readyAt: NotRequired[str]
    soaking: NotRequired[dict[str, str]]
    progressAt: NotRequired[str]


class StateEntry(TypedDict):
    """A rollout's state entry (see the module docstring)."""

    rolloutId: str
    revision: str
    state: str
    step: int
    steps: list[StepEntry]
    failed: list[Failure]
    startedAt: str | None
    updatedAt: str | None
    request: NotRequired[str]
    kind: NotRequired[str]
    promoted: NotRequired[bool]
    baseline: NotRequired[dict[str, str]]
    reason: NotRequired[str]
    skipped: NotRequired[list[Skipped]]
    waiting: NotRequired[list[Waiting]]
    startNow: NotRequired[list[str]]
    rolledBack: NotRequired[list[str]]
    before: NotRequired[dict[str, str | None]]
    spec: NotRequired[JsonObject]
    previous: NotRequired[JsonObject]


def stamp(now: datetime) -> str:
    """``now`` as the statuses store it (RFC 3339, seconds, Z)."""
    return now.isoformat(timespec="seconds").replace("+00:00", "Z")


def parse_time(value: object) -> datetime | None:
    """A stamp back to a time (None: not one)."""
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def same_but_updated(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    """Two state entries equal but for the time of their last change."""
    return {k: v for k, v in a.items() if k != "updatedAt"} == {
        k: v for k, v in b.items() if k != "updatedAt"}


def _names(value: object) -> list[str] | None:
    return [str(v) for v in value] if isinstance(value, list) else None


@dataclass
class Step:
    """One step: its clusters (cut when the rollout began), its state, when it began, the
    clusters started (given the revision) and of those the ones it changed, and when it
    became ready (a timed pause runs from then)."""

    clusters: list[str]
    state: str = PENDING
    begun_at: str | None = None
    started: list[str] | None = None
    changed: list[str] | None = None
    ready_at: str | None = None
    soaking: dict[str, str] = field(default_factory=dict)
    """Target -> since when it is seen ready without a break (``minReadySeconds``)."""
    progress_at: str | None = None
    """When the step last made progress (``progressDeadlineSeconds`` runs from then)."""
    ready_before: dict[str, str] = field(default_factory=dict)
    """A changed target -> since when its edge reported it ready when the step changed it:
    that report is of what it had before, and only a later one is of the new revision (the
    edges' clocks count in seconds, so the step's ``begunAt`` alone cannot tell a report
    of the same second apart)."""

    @classmethod
    def parse(cls, raw: object) -> Step | None:
        if not is_object(raw) or not isinstance(raw.get("clusters"), list):
            return None
        soaking, before = raw.get("soaking"), raw.get("readyBefore")
        return cls(_names(raw["clusters"]) or [], str(raw.get("state") or PENDING),
                   text(raw, "begunAt"), _names(raw.get("started")),
                   _names(raw.get("changed")), text(raw, "readyAt"),
                   {str(k): str(v) for k, v in soaking.items()}
                   if isinstance(soaking, Mapping) else {}, text(raw, "progressAt"),
                   {str(k): str(v) for k, v in before.items()}
                   if isinstance(before, Mapping) else {})

    def dump(self) -> StepEntry:
        found = StepEntry(clusters=list(self.clusters), state=self.state)
        if self.begun_at is not None:
            found["begunAt"] = self.begun_at
        if self.started is not None:
            found["started"] = list(self.started)
        if self.changed is not None:
            found["changed"] = list(self.changed)
        if self.ready_before:
            found["readyBefore"] = dict(self.ready_before)
        if self.ready_at is not None:
            found["readyAt"] = self.ready_at
        if self.soaking:
            found["soaking"] = dict(self.soaking)
        if self.progress_at is not None:
            found["progressAt"] = self.progress_at
        return found


@dataclass
class RolloutState:
    """The stored state of one rollout (see the module docstring)."""

    rollout_id: str
    revision: str
    state: str
    steps: list[Step]
    step: int = 0
    failed: list[Failure] = field(default_factory=list)
    started_at: str | None = None
    updated_at: str | None = None
    request: str | None = None
    kind: str | None = None
    baseline: dict[str, str] | None = None
    promoted: bool | None = None
    reason: str | None = None
    skipped: list[Skipped] = field(default_factory=list)
    waiting: list[Waiting] = field(default_factory=list)
    start_now: list[str] = field(default_factory=list)
    rolled_back: list[str] | None = None
    before: dict[str, str | None] | None = None
    spec: JsonObject | None = None
    previous: JsonObject | None = None

    @classmethod
    def parse(cls, raw: object) -> RolloutState | None:
        """The state an entry holds (None: none, or not one this code wrote)."""
        if not is_object(raw) or not isinstance(raw.get("steps"), list):
            return None
        steps = [Step.parse(s) for s in as_list(raw["steps"])]
        index = raw.get("step", 0)
        if not steps or None in steps or not isinstance(index, int) \
                or not 0 <= index < len(steps):
            return None
        failed = [Failure(cluster=str(f.get("cluster")), message=str(f.get("message")))
                  for f in as_list(raw.get("failed") or []) if is_object(f)]
        baseline = raw.get("baseline")
        promoted = raw.get("promoted")
        before = raw.get("before")
        return cls(str(raw.get("rolloutId") or ""), str(raw.get("revision") or ""),
                   str(raw.get("state") or ""), [s for s in steps if s is not None], index,
                   failed, text(raw, "startedAt"), text(raw, "updatedAt"),
                   text(raw, "request"), text(raw, "kind"),
                   {str(k): str(v) for k, v in baseline.items()}
                   if isinstance(baseline, Mapping) else None,
                   promoted if isinstance(promoted, bool) else None,
                   text(raw, "reason"), _skipped(raw.get("skipped")),
                   _waiting(raw.get("waiting")), _names(raw.get("startNow")) or [],
                   _names(raw.get("rolledBack")),
                   {str(k): None if v is None else str(v) for k, v in before.items()}
                   if isinstance(before, Mapping) else None,
                   _object(raw.get("spec")), _object(raw.get("previous")))

    def dump(self) -> StateEntry:
        """The entry to write."""
        found = StateEntry(
            rolloutId=self.rollout_id, revision=self.revision, state=self.state,
            step=self.step, steps=[s.dump() for s in self.steps],
            failed=[Failure(cluster=f["cluster"], message=f["message"])
                    for f in self.failed],
            startedAt=self.started_at, updatedAt=self.updated_at)
        if self.request is not None:
            found["request"] = self.request
        if self.kind is not None:
            found["kind"] = self.kind
        if self.promoted is not None:
            found["promoted"] = self.promoted
        if self.baseline is not None:
            found["baseline"] = dict(self.baseline)
        self._dump_gates(found)
        return found

    def _dump_gates(self, found: StateEntry) -> None:
        """The health gates' and rollback's fields, where they say anything."""
        if self.reason is not None:
            found["reason"] = self.reason
        if self.skipped:
            found["skipped"] = [s.copy() for s in self.skipped]
        if self.waiting:
            found["waiting"] = [w.copy() for w in self.waiting]
        if self.start_now:
            found["startNow"] = list(self.start_now)
        if self.rolled_back is not None:
            found["rolledBack"] = list(self.rolled_back)
        if self.before is not None:
            found["before"] = dict(self.before)
        if self.spec is not None:
            found["spec"] = self.spec
        if self.previous is not None:
            found["previous"] = self.previous

    @property
    def current(self) -> Step:
        """The step the rollout is at."""
        return self.steps[self.step]

    def changed(self) -> list[str]:
        """Every target a step of this rollout changed, in order."""
        return [c for step in self.steps for c in step.changed or []]

    def left_out(self) -> set[str]:
        """The skipped targets that have not been given the revision."""
        return {s["cluster"] for s in self.skipped if "given" not in s}

    def updated(self, targets: frozenset[str] | set[str]) -> set[str]:
        """The targets holding the revision: those of the steps begun (of the current one,
        those started) but the skipped ones not given it yet, every other target once the
        rollout is complete; none once rolled back."""
        if self.state == ROLLED_BACK:
            return set()
        if self.state == COMPLETE:
            return set(targets) - self.left_out()
        found = {c for step in self.steps[:self.step] for c in step.clusters}
        found |= set(self.current.started or [])
        return found & set(targets) - self.left_out()


def _object(value: object) -> JsonObject | None:
    """A JSON object of the entry (parsed as JSON: its members are JSON)."""
    return cast(JsonObject, value) if is_object(value) else None


def _skipped(value: object) -> list[Skipped]:
    found = []
    for item in as_list(value or []):
        if is_object(item) and isinstance(item.get("cluster"), str):
            entry = Skipped(cluster=str(item["cluster"]), reason=str(item.get("reason") or ""))
            if isinstance(item.get("given"), str):
                entry["given"] = str(item["given"])
            found.append(entry)
    return found


def _waiting(value: object) -> list[Waiting]:
    found = []
    for item in as_list(value or []):
        if is_object(item) and isinstance(item.get("cluster"), str):
            entry = Waiting(cluster=str(item["cluster"]), reason=str(item.get("reason") or ""))
            if isinstance(item.get("nextWindow"), str):
                entry["nextWindow"] = str(item["nextWindow"])
            found.append(entry)
    return found


def is_rolling(status: object) -> bool:
    """A rollout state that still moves: progressing, or waiting to give skipped targets
    the revision once their edges report again."""
    if not is_object(status):
        return False
    if status.get("state") == PROGRESSING:
        return True
    return status.get("state") == COMPLETE and any(
        is_object(s) and "given" not in s for s in as_list(status.get("skipped") or []))
