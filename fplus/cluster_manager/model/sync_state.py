"""Whether the edge runs what its repo holds: the ``sync`` of a cluster's status.

The repo's head is what we committed last; the edge's ``flux`` report (Edge Sync, see
``fplus.edge_sync.readiness``) and ``appliedCommit`` say what Flux applied and how it went:

=========== ==========================================================================
Synced       the edge applied the repo's head and every object it reports is ready
Progressing  the edge has not applied the head yet, or objects are still reconciling
Degraded     an object failed (``failing`` lists them, newest first); an object waiting
             for another one is progressing, not failed (Edge Sync tells them apart)
Unknown      nothing to compare: no repo commit, no report (yet, or an older Edge
             Sync), an edge that is offline, or a report Edge Sync could not complete
=========== ==========================================================================

The edge writes its report with its own credentials, so only well-formed parts are used
and every text is echoed as data, never interpreted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fplus.jsontypes import Doc, as_list, is_object, text

SYNCED, PROGRESSING, DEGRADED, UNKNOWN = "Synced", "Progressing", "Degraded", "Unknown"
STATES = (SYNCED, PROGRESSING, DEGRADED, UNKNOWN)
NOT_COMMISSIONED = "the cluster is not commissioned"

FAILING_SHOWN = 10
"""Failing objects named in a status (the count covers all)."""

_TEXT_FIELDS = ("kind", "namespace", "name", "reason", "message", "since", "revision")


@dataclass(frozen=True)
class Sync:
    """A cluster's sync state and what it rests on."""

    state: str
    reason: str
    applied: str | None = None
    failing: list[dict[str, str]] = field(default_factory=list)


def _objects(report: Doc) -> list[dict[str, object]]:
    return [o for o in as_list(report.get("objects")) if is_object(o)]


def _echo(obj: Doc) -> dict[str, str]:
    return {key: value for key in _TEXT_FIELDS if (value := text(obj, key)) is not None}


def report_count(report: Doc, key: str) -> int | None:
    """A count of the edge's Flux report (``total``, ``ready``, …); None unless an integer."""
    value = report.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def derive_sync(head: str | None, edge: Doc | None,
                edge_state: str | None) -> Sync:
    """The sync of a cluster whose repo is at ``head``, from the edge's status entry
    ``edge`` and its liveness ``edge_state`` (Online / Stale / Offline / None)."""
    if head is None:
        return Sync(UNKNOWN, "the cluster's repo has no commit yet")
    if not edge:
        return Sync(UNKNOWN, "Edge Sync has not reported yet")
    applied = text(edge, "appliedCommit")
    report = edge.get("flux")
    if edge_state == "Offline":
        return Sync(UNKNOWN, "the edge is offline: its last report is too old", applied)
    if not is_object(report):
        return Sync(UNKNOWN, "Edge Sync reports no Flux status (it predates it, or has "
                    "not read it yet)", applied)
    total, ready, failed = (report_count(report, key) for key in ("total", "ready", "failed"))
    if total is None or ready is None or failed is None:
        return Sync(UNKNOWN, "the edge's Flux status is malformed", applied)
    if failed:
        failing = [_echo(o) for o in _objects(report) if o.get("ready") == "False"]
        return Sync(DEGRADED, f"{failed} object(s) failed", applied, failing)
    if (error := text(report, "error")) is not None:
        return Sync(UNKNOWN, f"Edge Sync could not read everything: {error}",
                    applied)
    if applied != head:
        return Sync(PROGRESSING, f"the edge applied {applied or 'no commit yet'}; the repo is "
                    f"at {head}", applied)
    if ready < total:
        return Sync(PROGRESSING, f"{total - ready} of {total} object(s) not ready yet",
                    applied)
    return Sync(SYNCED, f"the edge applied {head} and all {total} object(s) are ready",
                applied)


def secret_unsealed(edge: Doc | None, namespace: str, name: str) -> bool | str:
    """Whether the edge's controller unsealed SealedSecret ``namespace/name``: True, False,
    or ``"unknown"`` (no report, or the object is not in it)."""
    report = (edge or {}).get("flux")
    if not is_object(report):
        return "unknown"
    for obj in _objects(report):
        if (obj.get("kind"), obj.get("namespace"), obj.get("name")) == (
                "SealedSecret", namespace, name):
            ready = obj.get("ready")
            return True if ready == "True" else False if ready == "False" else "unknown"
    return "unknown"
