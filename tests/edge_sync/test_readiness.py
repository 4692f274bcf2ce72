"""Flux objects → report entries and the bounded report (table tests, no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from fplus.edge_sync import readiness
from fplus.edge_sync.readiness import (
    GIT_REPOSITORY,
    HELM_RELEASE,
    KUSTOMIZATION,
    SEALED_SECRET,
    Kind,
    object_state,
    report,
)

SHA = "0123456789abcdef0123456789abcdef01234567"
UNINSTALLED = ("Helm uninstall succeeded for release fplus-edge/app-x.v1 with chart "
               "app-v1@1.0.0+98671c529cc4")
"""helm-controller v1.6.2's Ready once it has uninstalled a release (then, with the
HelmRelease's generation not yet observed, it installs it again)."""


def _obj(name: str = "apps", *, conditions: list[dict[str, Any]] | None = None,
         generation: int | None = None, **status: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "flux-system"}
    if generation is not None:
        meta["generation"] = generation
    return {"metadata": meta, "status": {"conditions": conditions or [], **status}}


def _ready(status: str, reason: str = "Why", message: str = "what happened",
           kind: str = "Ready", since: str = "2026-11-25T10:00:00Z") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": since}


CASES = [
    ("kustomization ready: revision, no message", KUSTOMIZATION,
     _obj(conditions=[_ready("True", "ReconciliationSucceeded")],
          lastAppliedRevision=f"main@sha1:{SHA}"),
     {"ready": "True", "reason": "ReconciliationSucceeded", "since": "2026-11-25T10:00:00Z",
      "revision": f"main@sha1:{SHA}"}),
    ("kustomization failed: message kept", KUSTOMIZATION,
     _obj(conditions=[_ready("False", "BuildFailed", "kustomize build failed")]),
     {"ready": "False", "reason": "BuildFailed", "message": "kustomize build failed",
      "since": "2026-11-25T10:00:00Z"}),
    ("helmrelease v2: revision from the newest history entry", HELM_RELEASE,
     _obj(conditions=[_ready("True", "InstallSucceeded")],
          history=[{"chartVersion": "2.17.1"}, {"chartVersion": "2.17.0"}]),
     {"ready": "True", "reason": "InstallSucceeded", "since": "2026-11-25T10:00:00Z",
      "revision": "2.17.1"}),
    ("sealedsecret: the Synced condition, not Ready", SEALED_SECRET,
     _obj(conditions=[_ready("True", kind="Ready"),
                      _ready("False", "", "no key could decrypt secret", kind="Synced")]),
     {"ready": "False", "message": "no key could decrypt secret",
      "since": "2026-11-25T10:00:00Z"}),
    ("gitrepository: the artifact's revision", GIT_REPOSITORY,
     _obj("self-link", conditions=[_ready("True", "Succeeded")],
          artifact={"revision": f"main@sha1:{SHA}"}),
     {"ready": "True", "reason": "Succeeded", "since": "2026-11-25T10:00:00Z",
      "revision": f"main@sha1:{SHA}"}),
    ("no status yet: Unknown", KUSTOMIZATION, {"metadata": {"name": "apps",
                                                            "namespace": "flux-system"}},
     {"ready": "Unknown"}),
    ("a condition status outside the three values: Unknown", KUSTOMIZATION,
     _obj(conditions=[{"type": "Ready", "status": "Maybe"}]), {"ready": "Unknown"}),
    ("a True about an older generation: Unknown, Progressing", KUSTOMIZATION,
     _obj(conditions=[_ready("True", "ReconciliationSucceeded")], generation=3,
          observedGeneration=2),
     {"ready": "Unknown", "reason": "Progressing", "message": "what happened",
      "since": "2026-11-25T10:00:00Z"}),
    ("waiting for a dependency is not a failure", KUSTOMIZATION,
     _obj(conditions=[_ready("False", "DependencyNotReady", "dependency 'x' is not ready")]),
     {"ready": "Unknown", "reason": "DependencyNotReady",
      "message": "dependency 'x' is not ready", "since": "2026-11-25T10:00:00Z"}),
    ("a HelmChart catching up with a chart change is a wait", HELM_RELEASE,
     _obj(conditions=[_ready("False", "SourceNotReady", "HelmChart 'n/c' is not ready: "
                             "latest generation of object has not been reconciled")]),
     {"ready": "Unknown", "reason": "SourceNotReady",
      "message": "HelmChart 'n/c' is not ready: latest generation of object has not been "
                 "reconciled", "since": "2026-11-25T10:00:00Z"}),
    ("a source that failed is a failure", HELM_RELEASE,
     _obj(conditions=[_ready("False", "SourceNotReady", "HelmChart 'n/c' is not ready: "
                             "chart not found")]),
     {"ready": "False", "reason": "SourceNotReady",
      "message": "HelmChart 'n/c' is not ready: chart not found",
      "since": "2026-11-25T10:00:00Z"}),
    ("the uninstall before a reinstall (the chart name changed) is a step, not a failure",
     HELM_RELEASE,
     _obj(conditions=[_ready("False", "UninstallSucceeded", UNINSTALLED)], generation=3,
          observedGeneration=2),
     {"ready": "Unknown", "reason": "UninstallSucceeded", "message": UNINSTALLED,
      "since": "2026-11-25T10:00:00Z"}),
    ("an uninstall helm-controller ended on (a remediation) is a failure", HELM_RELEASE,
     _obj(conditions=[_ready("False", "UninstallSucceeded", UNINSTALLED)], generation=3,
          observedGeneration=3),
     {"ready": "False", "reason": "UninstallSucceeded", "message": UNINSTALLED,
      "since": "2026-11-25T10:00:00Z"}),
    ("an artifact helm-controller waits for is a wait", HELM_RELEASE,
     _obj(conditions=[_ready("False", "ArtifactFailed", "Source not ready: artifact not "
                             "found. Retrying in 5s")], generation=3, observedGeneration=2),
     {"ready": "Unknown", "reason": "ArtifactFailed",
      "message": "Source not ready: artifact not found. Retrying in 5s",
      "since": "2026-11-25T10:00:00Z"}),
    ("a chart that cannot be loaded is a failure", HELM_RELEASE,
     _obj(conditions=[_ready("False", "ArtifactFailed", "Could not load chart: bad")]),
     {"ready": "False", "reason": "ArtifactFailed", "message": "Could not load chart: bad",
      "since": "2026-11-25T10:00:00Z"}),
    ("health checks canceled for a newer reconciliation are a wait", HELM_RELEASE,
     _obj(conditions=[_ready("False", "HealthCheckCanceled", "New reconciliation triggered "
                             "by HelmChart/n/c")], generation=2, observedGeneration=2),
     {"ready": "Unknown", "reason": "HealthCheckCanceled",
      "message": "New reconciliation triggered by HelmChart/n/c",
      "since": "2026-11-25T10:00:00Z"}),
    ("texts cut to their limits", KUSTOMIZATION,
     _obj(conditions=[_ready("False", "R" * 500, "m" * 5000)]),
     {"ready": "False", "reason": "R" * 127 + "…", "message": "m" * 299 + "…",
      "since": "2026-11-25T10:00:00Z"}),
    ("non-text fields are dropped, not echoed", KUSTOMIZATION,
     _obj(conditions=[{"type": "Ready", "status": "False", "reason": {"x": 1},
                       "message": 42}], lastAppliedRevision=["main"]),
     {"ready": "False"}),
]


@pytest.mark.parametrize(("kind", "obj", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_object_state(kind: Kind, obj: dict[str, Any], expected: dict[str, Any]) -> None:
    name = obj["metadata"]["name"]
    assert object_state(kind, obj) == {"kind": kind.kind, "namespace": "flux-system",
                                       "name": name, **expected}


def _entry(name: str, ready: str, since: str | None = None) -> dict[str, Any]:
    entry = {"kind": "Kustomization", "namespace": "ns", "name": name, "ready": ready}
    return {**entry, "since": since} if since else entry


def test_report_orders_failures_newest_first_then_progressing_then_ready() -> None:
    entries = [_entry("ok-b", "True", "2026-11-25T12:00:00Z"), _entry("ok-a", "True"),
               _entry("slow", "Unknown", "2026-11-25T09:00:00Z"),
               _entry("old-failure", "False", "2026-11-25T08:00:00Z"),
               _entry("new-failure", "False", "2026-11-25T11:00:00Z"),
               _entry("slower", "Unknown", "2026-11-25T10:00:00Z")]
    found = report(entries)
    assert [e["name"] for e in found["objects"]] == [
        "new-failure", "old-failure", "slower", "slow", "ok-a", "ok-b"]
    assert (found["total"], found["ready"], found["failed"], found["progressing"]) == (6, 2, 2, 2)
    assert found["error"] is None  # sent as null: the merge patch removes an earlier error


def test_report_is_bounded_and_counts_everything() -> None:
    entries = [_entry(f"ok-{i:03}", "True") for i in range(150)]
    entries += [_entry("broken", "False", "2026-11-25T11:00:00Z")]
    found = report(entries)
    assert len(found["objects"]) == readiness.MAX_OBJECTS
    assert found["objects"][0]["name"] == "broken"  # the cut never hides the failure
    assert (found["total"], found["ready"], found["failed"]) == (151, 150, 1)


def test_report_names_what_could_not_be_read() -> None:
    found = report([], error="listing HelmReleases: Kubernetes API answered 403 Forbidden")
    assert found == {"objects": [], "total": 0, "ready": 0, "failed": 0, "progressing": 0,
                     "error": "listing HelmReleases: Kubernetes API answered 403 Forbidden"}
