"""The state of one Edge deployment on its cluster, from what the edge's Edge Sync reports
(pure): its ``deployments`` report (the HelmReleases it applied, the deployments it could
not render) and its ``flux`` report (each HelmRelease's readiness).

``ready``: its HelmRelease is Ready; ``failed``: Edge Sync could not render it, or its
HelmRelease failed, or the last apply failed; ``progressing``: applied and not ready yet;
``unknown``: no report, or a report that does not mention it. ``commit`` is the revision the
HelmRelease last applied (its chart version; charts come from Git); ``since`` when its Ready
condition last changed, as the edge reports it (a rollout uses it to tell a report of the
new revision from one of the previous).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

READY, PROGRESSING, FAILED, UNKNOWN = "ready", "progressing", "failed", "unknown"
STATES = (READY, PROGRESSING, FAILED, UNKNOWN)


@dataclass(frozen=True)
class DeploymentState:
    """``state`` (one of :data:`STATES`), why in words, and the applied revision."""

    state: str
    message: str | None = None
    commit: str | None = None
    since: str | None = None


def _releases(edge: Mapping[str, Any], deployment: str) -> list[Mapping[str, Any]]:
    """The deployment's HelmReleases in the flux report (named ``<chart>-<uuid>``)."""
    objects = (edge.get("flux") or {}).get("objects") if isinstance(edge.get("flux"),
                                                                     dict) else None
    return [o for o in objects or [] if isinstance(o, dict) and o.get("kind") == "HelmRelease"
            and str(o.get("name", "")).endswith("-" + deployment)]


def deployment_state(deployment: str, edge: Mapping[str, Any] | None) -> DeploymentState:
    """The state of ``deployment`` given its cluster's Edge cluster status entry."""
    report = edge.get("deployments") if isinstance(edge, Mapping) else None
    if not isinstance(report, dict) or edge is None:
        return DeploymentState(UNKNOWN, "the edge has not reported its deployments")
    for failed in report.get("failed") or []:
        if isinstance(failed, dict) and failed.get("uuid") == deployment:
            return DeploymentState(FAILED, str(failed.get("error") or "Edge Sync refused it"))
    found = _releases(edge, deployment)
    if found:
        states = [o.get("ready") for o in found]
        commit = next((o["revision"] for o in found if isinstance(o.get("revision"), str)),
                      None)
        bad = next((o for o in found if o.get("ready") == "False"), None)
        if bad is not None:
            return DeploymentState(FAILED, str(bad.get("message") or bad.get("reason")
                                               or "the HelmRelease is not ready"), commit)
        if all(s == "True" for s in states):
            times = [o["since"] for o in found if isinstance(o.get("since"), str)]
            return DeploymentState(READY, None, commit, min(times) if times else None)
        waiting = next(o for o in found if o.get("ready") != "True")
        return DeploymentState(PROGRESSING, str(waiting.get("message") or waiting.get("reason")
                                                or "the HelmRelease is not ready yet"), commit)
    applied = any(isinstance(n, str) and n.endswith("-" + deployment)
                  for n in report.get("releases") or [])
    if isinstance(report.get("error"), str) and report["error"]:
        return DeploymentState(FAILED, f"Edge Sync could not apply: {report['error']}")
    if applied:
        return DeploymentState(PROGRESSING, "applied; Flux has not reported the HelmRelease")
    return DeploymentState(UNKNOWN, "the edge has not applied it yet")
