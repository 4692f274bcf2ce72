"""Paced rollouts of fleet deployments (pure): which clusters get a fleet deployment's new
revision, and the rollout's next status.

A fleet deployment with ``rollout: {maxUnavailable?, steps?: [{clusters, pause?}]}`` does
not change every cluster at once. Its *revision* (:func:`revision`: a digest of ``name``,
``chart``, ``values`` and ``overrides``) changing starts a rollout; the targeted clusters
are cut into steps when it starts (:func:`plan_steps`): ``clusters: N`` takes the next N,
``"P%"`` the next P% of all targeted clusters (rounded down, at least 1), a selector the
remaining ones whose labels it matches; the clusters no step took form a last step. Only the
clusters of the steps begun get the new revision; the others keep the deployment they have
(or get none yet). A step is done when every one of its clusters reports the deployment
ready (a cluster whose deployment the step changed: ready since the step began, by its
HelmRelease's Ready time, so a report of the previous revision does not count; this assumes
the edges' clocks roughly right); then its ``pause`` passes (seconds, or ``"manual"``: until
a resume) and the next step begins. A cluster of the current step reporting a failure halts
the rollout with the failing clusters named. ``maxUnavailable`` (N or ``"P%"`` of the step,
rounded down, at least 1; default: the whole step) caps how many clusters of the step have
the new revision and are not ready yet: the step's clusters get it in that many at a time. A
cluster that starts being targeted during a rollout is in no step: it gets the new revision
when the rollout completes. Requests (pause, resume, abort) come from the API through the
fleet deployment entry's ``rolloutRequest`` and are taken once each. Abort and halt leave
every cluster as it is.

:func:`advance` is the whole rule: the leader calls it on every pass (through
:func:`~.fleet_expansion.expand`) and writes the status it answers when it changed. Cluster
rollouts (:mod:`.cluster_rollouts`: a ``fluxVersion`` or Flux template given to many
clusters) are paced by the same rule: there the "revision" is the change, a cluster's state
comes from its setup status and its edge's sync, and ``current`` are the clusters whose
configuration already holds the change.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fplus.config_store import uuids
from fplus.kubenames.labels import selector_errors, selector_matches

from .deployment_state import FAILED, READY

ROLLOUT_APP = uuids.App.FleetRolloutStatus
PROGRESSING, PAUSED, HALTED, ABORTED, COMPLETE = (
    "Progressing", "Paused", "Halted", "Aborted", "Complete")
PENDING, WAITING, DONE = "Pending", "Waiting", "Done"
"""Step states besides Progressing: not begun, ready and pausing, ready and over."""
ACTIONS = ("pause", "resume", "abort")
MAX_STEPS = 100
MAX_PAUSE = 7 * 24 * 3600
REVISION_KEYS = ("name", "chart", "values", "overrides")
PERCENT = re.compile(r"(100|[1-9][0-9]?)%")
State = tuple[str, str | None, str | None]
"""A cluster's deployment: its state, why, and since when it is ready (the edge's word)."""


def revision(entry: Mapping[str, Any]) -> str:
    """The digest of what a rollout carries to the clusters."""
    body = {k: entry.get(k) or None for k in REVISION_KEYS}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def _count_errors(value: Any, field: str) -> dict[str, str]:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return {}
    if isinstance(value, str) and PERCENT.fullmatch(value):
        return {}
    return {field: f"{field} must be a whole number of clusters (at least 1) or a "
                   "percentage \"P%\" (1 to 100)"}


def rollout_errors(rollout: Any, field: str = "rollout") -> dict[str, str]:
    """Why a ``rollout`` field is refused, by field (``{}``: well-formed)."""
    if not isinstance(rollout, dict):
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
        if not isinstance(step, dict) or "clusters" not in step or set(step) - {"clusters",
                                                                             "pause"}:
            errors[at] = "a step is {clusters: N | \"P%\" | selector, pause?}"
            continue
        clusters = step["clusters"]
        errors |= (selector_errors(clusters, f"{at}.clusters") if isinstance(clusters, dict)
                   else _count_errors(clusters, f"{at}.clusters"))
        pause = step.get("pause", 0)
        if not (pause == "manual" or (isinstance(pause, int | float)
                                      and not isinstance(pause, bool)
                                      and 0 <= pause <= MAX_PAUSE)):
            errors[f"{at}.pause"] = (f"pause must be \"manual\" or a number of seconds (0 to "
                                     f"{MAX_PAUSE})")
    return errors


def _count(value: Any, total: int) -> int:
    """N, or P% of ``total`` rounded down (at least 1)."""
    if isinstance(value, str):
        return max(1, math.floor(int(value[:-1]) * total / 100))
    return int(value)


def plan_steps(spec: Mapping[str, Any], targets: Sequence[str],
               labels: Mapping[str, Mapping[str, str]]) -> list[list[str]]:
    """The targeted clusters cut into steps (sorted; the clusters no step took, last)."""
    remaining = sorted(targets)
    steps: list[list[str]] = []
    for step in spec.get("steps") or []:
        wanted = step["clusters"]
        if isinstance(wanted, dict):
            chosen = [c for c in remaining if selector_matches(wanted, labels.get(c) or {})]
        else:
            chosen = remaining[:_count(wanted, len(targets))]
        steps.append(chosen)
        remaining = [c for c in remaining if c not in chosen]
    if remaining or not steps:
        steps.append(remaining)
    return steps


@dataclass(frozen=True)
class Decision:
    """The rollout's next status, the clusters that get the new revision, and when the
    leader should look again (a timed pause ending), in seconds."""

    status: dict[str, Any]
    new: frozenset[str]
    wake_in: float | None = None


def stamp(now: datetime) -> str:
    """``now`` as the statuses store it (RFC 3339, seconds, Z)."""
    return now.isoformat(timespec="seconds").replace("+00:00", "Z")


def _parse(stamp: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return None


def begin(fleet: str, spec: Mapping[str, Any], rev: str, targets: Sequence[str],
          labels: Mapping[str, Mapping[str, str]], now: datetime) -> dict[str, Any]:
    """The status of a rollout of revision ``rev`` starting now."""
    steps = [{"clusters": c, "state": PENDING} for c in plan_steps(spec, targets, labels)]
    steps[0] |= {"state": PROGRESSING, "begunAt": stamp(now)}
    return {"rolloutId": str(uuidlib.uuid5(uuidlib.NAMESPACE_URL,
                                           f"{fleet}/{rev}/{stamp(now)}")),
            "revision": rev, "state": PROGRESSING, "step": 0, "steps": steps, "failed": [],
            "startedAt": stamp(now), "updatedAt": stamp(now)}


def advance(fleet: str, spec: Mapping[str, Any], rev: str, targets: Sequence[str],
            labels: Mapping[str, Mapping[str, str]], previous: Mapping[str, Any] | None,
            states: Mapping[str, State], request: Mapping[str, Any] | None, now: datetime,
            current: frozenset[str] = frozenset()) -> Decision:
    """One look at a rollout: ``spec`` the fleet deployment's ``rollout``, ``rev`` its
    revision, ``targets`` the clusters it targets (their ``labels``), ``previous`` the
    stored status, ``states`` each cluster's ``(state, message, since)`` of its deployment,
    ``request`` the entry's ``rolloutRequest``, ``current`` the clusters whose deployment
    already holds the revision."""
    if (not isinstance(previous, Mapping) or previous.get("revision") != rev
            or not isinstance(previous.get("steps"), list) or not previous["steps"]):
        status = begin(fleet, spec, rev, targets, labels, now)
    else:
        status = copy.deepcopy(dict(previous))
    _take_request(status, request, now)
    wake = _progress(status, spec, set(targets), states, now, current) \
        if status["state"] == PROGRESSING else None
    if previous is None or {k: v for k, v in status.items() if k != "updatedAt"} != {
            k: v for k, v in previous.items() if k != "updatedAt"}:
        status["updatedAt"] = stamp(now)
    return Decision(status, frozenset(_new(status, targets)), wake)


def _take_request(status: dict[str, Any], request: Mapping[str, Any] | None,
                  now: datetime) -> None:
    if not isinstance(request, Mapping) or request.get("rolloutId") != status["rolloutId"] \
            or request.get("at") == status.get("request"):
        return
    status["request"] = request.get("at")
    action, state = request.get("action"), status["state"]
    step = status["steps"][status["step"]]
    if action == "pause" and state == PROGRESSING:
        status["state"] = PAUSED
    elif action == "resume" and state in (PAUSED, HALTED):
        status["state"], status["failed"] = PROGRESSING, []
        if step["state"] == DONE:  # a manual pause after the step: on to the next
            _next_step(status, now)
        elif step["state"] == HALTED:
            step["state"] = PROGRESSING
    elif action == "abort" and state not in (COMPLETE, ABORTED):
        status["state"] = ABORTED


def _next_step(status: dict[str, Any], now: datetime) -> None:
    status["step"] += 1
    status["steps"][status["step"]] |= {"state": PROGRESSING, "begunAt": stamp(now)}


def _limit(spec: Mapping[str, Any], size: int) -> int:
    found = spec.get("maxUnavailable")
    return size if found is None else _count(found, size)


def _ready(step: Mapping[str, Any], cluster: str, states: Mapping[str, State]) -> bool:
    """Reported ready, and (if the step changed its deployment) since the step began."""
    state, _, since = states.get(cluster, ("", None, None))
    if state != READY:
        return False
    if cluster not in step.get("changed", []):
        return True
    began, at = _parse(step.get("begunAt")), _parse(since)
    return began is not None and at is not None and at >= began


def _progress(status: dict[str, Any], spec: Mapping[str, Any], targets: set[str],
              states: Mapping[str, State], now: datetime,
              current: frozenset[str]) -> float | None:
    """Move a Progressing rollout on as far as it can go now; seconds until a pause ends."""
    pauses = [s.get("pause") for s in spec.get("steps") or []]
    while True:
        index = status["step"]
        step = status["steps"][index]
        members = [c for c in step["clusters"] if c in targets]
        pause = pauses[index] if index < len(pauses) else None
        if step["state"] == WAITING:
            ends = (_parse(step.get("readyAt")) or now).timestamp() + float(pause or 0)
            if now.timestamp() < ends:
                return ends - now.timestamp()
            step["state"] = DONE
            _next_step(status, now)
            continue
        started = step.setdefault("started", [])
        busy = [c for c in started if c in targets and not _ready(step, c, states)]
        room = _limit(spec, len(members)) - len(busy)
        for cluster in members:
            if room <= 0:
                break
            if cluster not in started:
                started.append(cluster)
                if cluster not in current:
                    step.setdefault("changed", []).append(cluster)
                room -= 1
        failed = [{"cluster": c, "message": states[c][1] or "failed"}
                  for c in started if c in targets and states.get(c, ("",))[0] == FAILED]
        if failed:
            status["state"], status["failed"], step["state"] = HALTED, failed, HALTED
            return None
        if any(c not in started or not _ready(step, c, states) for c in members):
            return None
        if index == len(status["steps"]) - 1:
            step["state"], status["state"] = DONE, COMPLETE
            return None
        if pause == "manual":
            step["state"], status["state"] = DONE, PAUSED
            return None
        if pause:
            step["state"], step["readyAt"] = WAITING, stamp(now)
            continue
        step["state"] = DONE
        _next_step(status, now)


def _new(status: Mapping[str, Any], targets: Sequence[str]) -> set[str]:
    """The clusters that get the new revision: those of the steps begun (of the current
    one, those started), every target once the rollout is complete."""
    if status["state"] == COMPLETE:
        return set(targets)
    index = status["step"]
    found = {c for step in status["steps"][:index] for c in step["clusters"]}
    found |= set(status["steps"][index].get("started") or [])
    return found & set(targets)
