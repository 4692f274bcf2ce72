"""Flux objects → the ``flux`` report of the Edge cluster status (pure functions).

For the self-link GitRepository and every Kustomization, HelmRelease and SealedSecret in
the cluster, the report holds the readiness condition (``Ready``; SealedSecrets call it
``Synced``) and the revision the object last applied. The report is bounded: at most
:data:`MAX_OBJECTS` objects, texts cut to fixed lengths, and the objects that matter most
first (failures newest first, then those still progressing, then the ready ones), so a
cut never hides a failure unless there are more failures than fit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from fplus.jsontypes import Doc, as_list, as_object, is_object

from .report import FluxObject, FluxReport, Readiness

MAX_OBJECTS = 100
"""Objects listed in one report (the schema's ``maxItems``); the counts cover all."""
MAX_MESSAGE = 300
"""Characters of a condition message kept (the schema's ``maxLength``)."""
MAX_TEXT = 128
"""Characters of a reason or revision kept."""
MAX_NAME = 253
"""A Kubernetes name's limit (the schema's ``maxLength`` for names)."""

READY_VALUES: tuple[Readiness, ...] = ("True", "False", "Unknown")
WAITING_REASONS = frozenset({"DependencyNotReady", "HealthCheckCanceled"})
"""``False`` reasons that mean "waiting": for another object, or (health checks canceled)
for the reconciliation of a newer request the controller starts at once. Reported as
``Unknown``."""
CATCHING_UP = (("SourceNotReady", "latest generation of object has not been reconciled"),
               ("ArtifactFailed", "Source not ready: artifact not found"))
"""helm-controller's ``False`` (reason, words of its message) while the HelmChart it made
has not acted on its newest spec yet (a chart change in flight), or its artifact is not
served yet (helm-controller waits for it as for a dependency): a wait too. Any other
``SourceNotReady`` (a source that failed) or ``ArtifactFailed`` stays a failure."""
STEPS = frozenset({"UninstallSucceeded"})
"""helm-controller's ``False`` reasons that, while the object has not acted on its newest
spec (``observedGeneration`` lags), are a step of acting on it, not its outcome:
``UninstallSucceeded`` is the uninstall before it installs the release again (its chart
name, release name or namespace changed: helm-controller v1.6.2 writes Ready ``False``
"Helm uninstall succeeded …" and requeues). Once it has (no lag), the same reason is an
outcome (a failed install remediated by uninstalling it): a failure."""


@dataclass(frozen=True)
class Kind:
    """A kind of object reported: where it is served and which condition says it is ready."""

    kind: str
    api_version: str
    plural: str
    condition: str = "Ready"


KUSTOMIZATION = Kind("Kustomization", "kustomize.toolkit.fluxcd.io/v1", "kustomizations")
HELM_RELEASE = Kind("HelmRelease", "helm.toolkit.fluxcd.io/v2", "helmreleases")
SEALED_SECRET = Kind("SealedSecret", "bitnami.com/v1alpha1", "sealedsecrets", "Synced")
GIT_REPOSITORY = Kind("GitRepository", "source.toolkit.fluxcd.io/v1", "gitrepositories")

_REVISION_COMMIT = re.compile(r"(?:@sha1:|/)([0-9a-f]{40})$")
"""The commit in a Flux revision: ``main@sha1:<sha>`` (Flux 2.x), ``main/<sha>`` (older)."""

CLUSTER_WIDE = (KUSTOMIZATION, HELM_RELEASE, SEALED_SECRET)
"""Kinds reported from every namespace (the self-link GitRepository is read by name)."""


def _cut(value: object, limit: int) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _condition(status: Doc, kind: Kind) -> Doc:
    for cond in as_list(status.get("conditions")):
        if is_object(cond) and cond.get("type") == kind.condition:
            return cond
    return {}


def _readiness(value: object) -> Readiness:
    """A condition's status, ``"Unknown"`` for anything else."""
    for ready in READY_VALUES:
        if value == ready:
            return ready
    return "Unknown"


def _revision(kind: Kind, status: Doc) -> object:
    if kind is GIT_REPOSITORY:
        return as_object(status.get("artifact")).get("revision")
    if kind is HELM_RELEASE:  # v2: the newest release in the history; v2beta: the field
        history = status.get("history")
        if isinstance(history, list) and history and is_object(history[0]):
            return history[0].get("chartVersion")
        return status.get("lastAppliedRevision")
    return status.get("lastAppliedRevision")


def _waiting(reason: object, message: object, lagging: bool) -> bool:
    """A ``False`` condition that only waits, or (``lagging``: the object has not acted on
    its newest spec) is a step on the way."""
    if not isinstance(reason, str):
        return False
    if reason in WAITING_REASONS or (lagging and reason in STEPS):
        return True
    return isinstance(message, str) and any(
        reason == waits_for and saying in message for waits_for, saying in CATCHING_UP)


def object_state(kind: Kind, obj: Doc) -> FluxObject:
    """One object (its JSON form) as a report entry.

    ``ready`` is the condition's status, ``"Unknown"`` without one. An object whose
    ``observedGeneration`` lags its ``generation`` has not acted on its newest spec yet: a
    ``True`` it still carries is about the old one, so it counts as ``Unknown``
    (``reason: Progressing``); so does a ``False`` that only waits (:data:`WAITING_REASONS`,
    :data:`CATCHING_UP`) or, while it lags, is a step of acting on the newest spec
    (:data:`STEPS`): ``False`` means failed (a rollout halts on it). A message is kept only
    for objects that are not ready.
    """
    meta = as_object(obj.get("metadata"))
    status = as_object(obj.get("status"))
    cond = _condition(status, kind)
    ready = _readiness(cond.get("status"))
    reason = cond.get("reason")
    generation, observed = meta.get("generation"), status.get("observedGeneration")
    lagging = (isinstance(generation, int) and isinstance(observed, int)
               and observed < generation)
    if ready == "True" and lagging:
        ready, reason = "Unknown", "Progressing"
    if ready == "False" and _waiting(reason, cond.get("message"), lagging):
        ready = "Unknown"
    entry: FluxObject = {"kind": kind.kind, "namespace": str(meta.get("namespace") or ""),
                         "name": str(meta.get("name") or "")[:MAX_NAME], "ready": ready}
    if (cut := _cut(reason, MAX_TEXT)) is not None:
        entry["reason"] = cut
    if ready != "True" and (cut := _cut(cond.get("message"), MAX_MESSAGE)) is not None:
        entry["message"] = cut
    if (cut := _cut(cond.get("lastTransitionTime"), MAX_TEXT)) is not None:
        entry["since"] = cut
    if (cut := _cut(_revision(kind, status), MAX_TEXT)) is not None:
        entry["revision"] = cut
    return entry


def applied_commit(kustomization: Doc | None) -> str | None:
    """The repo commit a Kustomization last applied (its ``lastAppliedRevision``), or None."""
    revision = as_object((kustomization or {}).get("status")).get("lastAppliedRevision")
    found = _REVISION_COMMIT.search(revision) if isinstance(revision, str) else None
    return found[1] if found else None


_RANK = {"False": 0, "Unknown": 1, "True": 2}


def _ordered(entries: Iterable[FluxObject]) -> list[FluxObject]:
    """Failures, then progressing, then ready; the first two newest first (stable sorts)."""
    found = sorted((e.copy() for e in entries),
                   key=lambda e: (e["kind"], e["namespace"], e["name"]))
    found.sort(key=lambda e: "" if e["ready"] == "True" else e.get("since") or "",
               reverse=True)
    found.sort(key=lambda e: _RANK[e["ready"]])
    return found


def report(entries: Iterable[FluxObject], *, limit: int = MAX_OBJECTS,
           error: str | None = None) -> FluxReport:
    """The ``flux`` report: the first ``limit`` entries in order (see the module docstring)
    and counts over all of them; ``error`` says what could not be read (None, always
    present: the merge patch that carries the report then removes an earlier error)."""
    ordered = _ordered(entries)
    counts = {value: 0 for value in READY_VALUES}
    for entry in ordered:
        counts[entry["ready"]] += 1
    return {"objects": ordered[:limit], "total": len(ordered), "ready": counts["True"],
            "failed": counts["False"], "progressing": counts["Unknown"],
            "error": _cut(error, MAX_MESSAGE)}
