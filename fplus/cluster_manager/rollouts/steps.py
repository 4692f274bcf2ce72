"""A rollout's plan (pure): the ``rollout`` field ``{maxUnavailable?, steps?: [{clusters,
pause?}], minReadySeconds?, maxFailures?, progressDeadlineSeconds?, offline?, onFailure?}``
checked (:func:`spec_errors`), parsed (:meth:`Spec.parse`), and the targets cut into steps
when a rollout begins (:func:`plan_steps`).

``clusters: N`` takes the next N targets, ``"P%"`` the next P% of all of them (rounded down,
at least 1), a selector the remaining ones whose labels it matches; the targets no step took
form a last step. ``pause`` is seconds, or ``"manual"`` (until a resume). ``maxUnavailable``
(N or ``"P%"`` of the step) caps how many targets of a step hold the revision and are not
ready yet. The health gates (applied by :mod:`.rule`): ``minReadySeconds`` (a target is done
once ready that long without a break), ``maxFailures`` (N or ``"P%"`` of the targets, rounded
down; default 0) failures tolerated, ``progressDeadlineSeconds`` (a step that makes no progress
that long halts), ``offline`` (``wait`` or ``skip`` a target whose edge stopped reporting) and
``onFailure`` (``halt`` or ``rollback``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Required, TypedDict, cast

from fplus.jsontypes import Doc, JsonObject, is_object
from fplus.kubenames.labels import selector_errors, selector_matches

MAX_STEPS = 100
MAX_PAUSE = 7 * 24 * 3600
"""The longest pause, soak (``minReadySeconds``) and ``progressDeadlineSeconds``: a week."""
MANUAL = "manual"
WAIT, SKIP = "wait", "skip"
HALT, ROLLBACK = "halt", "rollback"
GATES = {"minReadySeconds", "maxFailures", "progressDeadlineSeconds", "offline", "onFailure"}
PERCENT = re.compile(r"(100|[1-9][0-9]?)%")
Count = int | str
"""N targets, or ``"P%"``."""


def _count_errors(value: object, field: str) -> dict[str, str]:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return {}
    if isinstance(value, str) and PERCENT.fullmatch(value):
        return {}
    return {field: f"{field} must be a whole number of clusters (at least 1) or a "
                   "percentage \"P%\" (1 to 100)"}


def _pause_ok(pause: object) -> bool:
    return pause == MANUAL or (isinstance(pause, int | float) and not isinstance(pause, bool)
                               and 0 <= pause <= MAX_PAUSE)


def _seconds_ok(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and least <= value <= MAX_PAUSE


def _gate_errors(rollout: Mapping[str, object], field: str) -> dict[str, str]:
    """Why the health gates of a ``rollout`` field are refused."""
    errors: dict[str, str] = {}
    for key, least in (("minReadySeconds", 0), ("progressDeadlineSeconds", 1)):
        if key in rollout and not _seconds_ok(rollout[key], least):
            errors[f"{field}.{key}"] = (f"{key} must be a whole number of seconds ({least} to "
                                        f"{MAX_PAUSE})")
    failures = rollout.get("maxFailures", 0)
    if "maxFailures" in rollout and not (isinstance(failures, int) and not isinstance(
            failures, bool) and failures >= 0) and not (isinstance(failures, str) and (
            failures == "0%" or PERCENT.fullmatch(failures))):
        errors[f"{field}.maxFailures"] = ("maxFailures must be a whole number of clusters (0 "
                                          "or more) or a percentage \"P%\" (0 to 100)")
    soak, deadline = rollout.get("minReadySeconds", 0), rollout.get("progressDeadlineSeconds")
    if not errors and isinstance(deadline, int) and isinstance(soak, int) and deadline <= soak:
        errors[f"{field}.progressDeadlineSeconds"] = (
            "progressDeadlineSeconds must be longer than minReadySeconds (a cluster soaking "
            "makes no progress)")
    for key, allowed in (("offline", (WAIT, SKIP)), ("onFailure", (HALT, ROLLBACK))):
        if key in rollout and rollout[key] not in allowed:
            errors[f"{field}.{key}"] = f"{key} must be {' or '.join(map(repr, allowed))}"
    return errors


def spec_errors(rollout: object, field: str = "rollout") -> dict[str, str]:
    """Why a ``rollout`` field is refused, by field (``{}``: well-formed)."""
    if not is_object(rollout):
        return {field: f"{field} must be an object {{maxUnavailable?, steps?, "
                       "minReadySeconds?, maxFailures?, progressDeadlineSeconds?, offline?, "
                       "onFailure?}"}
    errors: dict[str, str] = {}
    unknown = set(rollout) - {"maxUnavailable", "steps"} - GATES
    if unknown:
        errors[field] = f"unknown keys in {field}: {', '.join(sorted(map(str, unknown)))}"
    if "maxUnavailable" in rollout:
        errors |= _count_errors(rollout["maxUnavailable"], f"{field}.maxUnavailable")
    errors |= _gate_errors(rollout, field)
    steps = rollout.get("steps", [])
    if not isinstance(steps, list) or len(steps) > MAX_STEPS:
        errors[f"{field}.steps"] = f"steps must be a list of at most {MAX_STEPS} steps"
        return errors
    for index, step in enumerate(steps):
        at = f"{field}.steps[{index}]"
        if not is_object(step) or "clusters" not in step or set(step) - {"clusters",
                                                                             "pause"}:
            errors[at] = "a step is {clusters: N | \"P%\" | selector, pause?}"
            continue
        clusters = step["clusters"]
        errors |= (selector_errors(clusters, f"{at}.clusters") if isinstance(clusters, dict)
                   else _count_errors(clusters, f"{at}.clusters"))
        if not _pause_ok(step.get("pause", 0)):
            errors[f"{at}.pause"] = (f"pause must be \"manual\" or a number of seconds (0 to "
                                     f"{MAX_PAUSE})")
    return errors


def count(value: Count, total: int, least: int = 1) -> int:
    """N, or P% of ``total`` rounded down (at least ``least``)."""
    if isinstance(value, str):
        return max(least, math.floor(int(value[:-1]) * total / 100))
    return int(value)


class StepField(TypedDict, total=False):
    """A step of a ``rollout`` field :func:`spec_errors` accepts."""

    clusters: Required[Count | JsonObject]
    pause: float | str


class RolloutField(TypedDict, total=False):
    """A ``rollout`` field :func:`spec_errors` accepts."""

    maxUnavailable: Count
    steps: list[StepField]
    minReadySeconds: int
    maxFailures: Count
    progressDeadlineSeconds: int
    offline: str
    onFailure: str


@dataclass(frozen=True)
class StepSpec:
    """One step asked for: which targets (a count or a selector) and the pause after it."""

    clusters: Count | Doc
    pause: float | str | None = None


@dataclass(frozen=True)
class Spec:
    """A well-formed ``rollout`` field."""

    steps: tuple[StepSpec, ...] = ()
    max_unavailable: Count | None = None
    min_ready: float = 0
    """``minReadySeconds``: how long a target stays ready before it counts as done."""
    max_failures: Count = 0
    deadline: float | None = None
    """``progressDeadlineSeconds``: how long a step may go without progress."""
    offline: str = WAIT
    on_failure: str = HALT

    @classmethod
    def parse(cls, raw: object) -> Spec:
        """The spec of a field :func:`spec_errors` accepts (anything else: one step, no
        limit)."""
        if not isinstance(raw, Mapping) or spec_errors(dict(raw)):
            return cls()
        checked = cast(RolloutField, raw)  # spec_errors checked every field
        deadline = checked.get("progressDeadlineSeconds")
        return cls(tuple(StepSpec(s["clusters"], s.get("pause"))
                         for s in checked.get("steps") or []),
                   checked.get("maxUnavailable"), checked.get("minReadySeconds", 0),
                   checked.get("maxFailures", 0),
                   None if deadline is None else float(deadline),
                   checked.get("offline", WAIT), checked.get("onFailure", HALT))

    def pause(self, index: int) -> float | str | None:
        """The pause after step ``index`` (None: none asked for)."""
        return self.steps[index].pause if index < len(self.steps) else None

    def limit(self, size: int) -> int:
        """How many of a step of ``size`` targets may be busy at once."""
        return size if self.max_unavailable is None else count(self.max_unavailable, size)

    def failures_allowed(self, targets: int) -> int:
        """How many of ``targets`` targets may fail before the rollout halts."""
        return count(self.max_failures, targets, least=0)


def plan_steps(spec: Spec, targets: Sequence[str],
               labels: Mapping[str, Mapping[str, str]]) -> list[list[str]]:
    """The targets cut into steps (sorted; the targets no step took, last)."""
    remaining = sorted(targets)
    steps: list[list[str]] = []
    for step in spec.steps:
        wanted = step.clusters
        if isinstance(wanted, Mapping):
            chosen = [c for c in remaining if selector_matches(dict(wanted),
                                                               labels.get(c) or {})]
        else:
            chosen = remaining[:count(wanted, len(targets))]
        steps.append(chosen)
        remaining = [c for c in remaining if c not in chosen]
    if remaining or not steps:
        steps.append(remaining)
    return steps
