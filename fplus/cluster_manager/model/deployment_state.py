"""The state of one Edge deployment on its cluster, from what the edge's Edge Sync reports
(pure): its ``deployments`` report (the HelmReleases it applied, the deployments it could
not render) and its ``flux`` report (each HelmRelease's readiness).

``ready``: its HelmRelease is Ready; ``failed``: Edge Sync could not render it, or its
HelmRelease failed, or the last apply failed; ``progressing``: applied and not ready yet;
``unknown``: no report, or a report that does not mention it. ``commit`` is the revision the
HelmRelease last applied (its chart version; charts come from Git); ``since`` when its Ready
condition last changed, as the edge reports it (a rollout uses it to tell a report of the
new revision from one of the previous). ``drifted``: Edge Sync reports that helm-controller
found an object of its release changed on the edge (``drifted`` on the HelmRelease);
``waiting``: helm-controller holds it back until a deployment it depends on is ready
(:data:`WAITING_REASON`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from fplus.jsontypes import Doc, as_list, as_object, is_object, text

READY, PROGRESSING, FAILED, UNKNOWN = "ready", "progressing", "failed", "unknown"
STATES = (READY, PROGRESSING, FAILED, UNKNOWN)
WAITING_REASON = "DependencyNotReady"
"""helm-controller's reason while a HelmRelease waits on its ``dependsOn``."""


@dataclass(frozen=True)
class DeploymentState:
    """``state`` (one of :data:`STATES`), why in words, and the applied revision."""

    state: str
    message: str | None = None
    commit: str | None = None
    since: str | None = None
    drifted: bool = False
    waiting: bool = False


def _releases(edge: Doc, deployment: str) -> list[dict[str, object]]:
    """The deployment's HelmReleases in the flux report (named ``<chart>-<uuid>``)."""
    objects = as_list(as_object(edge.get("flux")).get("objects"))
    return [o for o in objects if is_object(o) and o.get("kind") == "HelmRelease"
            and str(o.get("name", "")).endswith("-" + deployment)]


def deployment_state(deployment: str, edge: object) -> DeploymentState:
    """The state of ``deployment`` given its cluster's Edge cluster status entry."""
    report = edge.get("deployments") if isinstance(edge, Mapping) else None
    if not is_object(report) or not isinstance(edge, Mapping):
        return DeploymentState(UNKNOWN, "the edge has not reported its deployments")
    for failed in as_list(report.get("failed")):
        if is_object(failed) and failed.get("uuid") == deployment:
            return DeploymentState(FAILED, str(failed.get("error") or "Edge Sync refused it"))
    found = _releases(edge, deployment)
    if found:
        drifted = any(o.get("drifted") is True for o in found)
        waiting = any(o.get("reason") == WAITING_REASON for o in found)
        return dataclasses.replace(_state(found), drifted=drifted, waiting=waiting)
    applied = any(isinstance(n, str) and n.endswith("-" + deployment)
                  for n in as_list(report.get("releases")))
    if error := text(report, "error"):
        return DeploymentState(FAILED, f"Edge Sync could not apply: {error}")
    if applied:
        return DeploymentState(PROGRESSING, "applied; Flux has not reported the HelmRelease")
    return DeploymentState(UNKNOWN, "the edge has not applied it yet")


def _state(found: list[dict[str, object]]) -> DeploymentState:
    """The state of a deployment's reported HelmReleases (at least one)."""
    states = [o.get("ready") for o in found]
    commit = next((r for o in found if (r := text(o, "revision")) is not None), None)
    bad = next((o for o in found if o.get("ready") == "False"), None)
    if bad is not None:
        return DeploymentState(FAILED, str(bad.get("message") or bad.get("reason")
                                           or "the HelmRelease is not ready"), commit)
    if all(s == "True" for s in states):
        times = [t for o in found if (t := text(o, "since")) is not None]
        return DeploymentState(READY, None, commit, min(times) if times else None)
    waiting = next(o for o in found if o.get("ready") != "True")
    return DeploymentState(PROGRESSING, str(waiting.get("message") or waiting.get("reason")
                                            or "the HelmRelease is not ready yet"), commit)
