"""A rollout's plan (pure): the ``rollout`` field ``{maxUnavailable?, steps?: [{clusters,
pause?}]}`` checked (:func:`spec_errors`), parsed (:meth:`Spec.parse`), and the targets cut
into steps when a rollout begins (:func:`plan_steps`).

``clusters: N`` takes the next N targets, ``"P%"`` the next P% of all of them (rounded down,
at least 1), a selector the remaining ones whose labels it matches; the targets no step took
form a last step. ``pause`` is seconds, or ``"manual"`` (until a resume). ``maxUnavailable``
(N or ``"P%"`` of the step) caps how many targets of a step hold the revision and are not
ready yet.
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
MANUAL = "manual"
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


def spec_errors(rollout: object, field: str = "rollout") -> dict[str, str]:
    """Why a ``rollout`` field is refused, by field (``{}``: well-formed)."""
    if not is_object(rollout):
        return {field: f"{field} must be an object {{maxUnavailable?, steps?}}"}
    errors: dict[str, str] = {}
    unknown = set(rollout) - {"maxUnavailable", "steps"}
    if unknown:
        errors[field] = f"unknown keys in {field}: {', '.join(sorted(map(str, unknown)))}"
    if "maxUnavailable" in rollout:
        errors |= _count_errors(rollout["maxUnavailable"], f"{field}.maxUnavailable")
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


def count(value: Count, total: int) -> int:
    """N, or P% of ``total`` rounded down (at least 1)."""
    if isinstance(value, str):
        return max(1, math.floor(int(value[:-1]) * total / 100))
    return int(value)


class StepField(TypedDict, total=False):
    """A step of a ``rollout`` field :func:`spec_errors` accepts."""

    clusters: Required[Count | JsonObject]
    pause: float | str


class RolloutField(TypedDict, total=False):
    """A ``rollout`` field :func:`spec_errors` accepts."""

    maxUnavailable: Count
    steps: list[StepField]


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

    @classmethod
    def parse(cls, raw: object) -> Spec:
        """The spec of a field :func:`spec_errors` accepts (anything else: one step, no
        limit)."""
        if not isinstance(raw, Mapping) or spec_errors(dict(raw)):
            return cls()
        checked = cast(RolloutField, raw)  # spec_errors checked every field
        return cls(tuple(StepSpec(s["clusters"], s.get("pause"))
                         for s in checked.get("steps") or []),
                   checked.get("maxUnavailable"))

    def pause(self, index: int) -> float | str | None:
        """The pause after step ``index`` (None: none asked for)."""
        return self.steps[index].pause if index < len(self.steps) else None

    def limit(self, size: int) -> int:
        """How many of a step of ``size`` targets may be busy at once."""
        return size if self.max_unavailable is None else count(self.max_unavailable, size)


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
