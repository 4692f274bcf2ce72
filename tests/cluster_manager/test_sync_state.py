"""``sync`` from the repo's head and the edge's report (table tests, no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from fplus.cluster_manager.model.sync_state import derive_sync, secret_unsealed

HEAD = "a" * 40
OLD = "b" * 40


def _flux(*objects: dict[str, Any], error: str | None = None, **counts: int) -> dict[str, Any]:
    ready = sum(1 for o in objects if o["ready"] == "True")
    failed = sum(1 for o in objects if o["ready"] == "False")
    report = {"objects": list(objects), "total": len(objects), "ready": ready,
              "failed": failed, "progressing": len(objects) - ready - failed}
    report.update(counts)
    if error:
        report["error"] = error
    return report


def _obj(name: str, ready: str, kind: str = "Kustomization", **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "namespace": "flux-system", "name": name, "ready": ready, **extra}


def _edge(applied: str | None = HEAD, flux: Any = None) -> dict[str, Any]:
    edge: dict[str, Any] = {"lastSeen": "2026-11-25T10:00:00Z"}
    if applied:
        edge["appliedCommit"] = applied
    if flux is not None:
        edge["flux"] = flux
    return edge


OK = _obj("self-link", "True")
BROKEN = _obj("sealed-secrets", "False", "HelmRelease", reason="InstallFailed",
              message="install retries exhausted")

CASES = [
    ("applied the head, all ready", HEAD, _edge(HEAD, _flux(OK, _obj("apps", "True"))),
     "Online", "Synced"),
    ("applied an older commit", HEAD, _edge(OLD, _flux(OK)), "Online", "Progressing"),
    ("applied nothing yet", HEAD, _edge(None, _flux()), "Online", "Progressing"),
    ("applied the head, one still reconciling", HEAD,
     _edge(HEAD, _flux(OK, _obj("apps", "Unknown"))), "Online", "Progressing"),
    ("a failure, whatever was applied", HEAD, _edge(OLD, _flux(OK, BROKEN)), "Online",
     "Degraded"),
    ("a failure beyond the listed objects still counts", HEAD,
     _edge(HEAD, _flux(OK, failed=1)), "Online", "Degraded"),
    ("no repo commit", None, _edge(HEAD, _flux(OK)), "Online", "Unknown"),
    ("no edge report", HEAD, None, None, "Unknown"),
    ("an Edge Sync without flux reports", HEAD, _edge(HEAD), "Online", "Unknown"),
    ("offline: the report is too old to trust", HEAD, _edge(HEAD, _flux(OK)), "Offline",
     "Unknown"),
    ("stale is still trusted", HEAD, _edge(HEAD, _flux(OK)), "Stale", "Synced"),
    ("a report Edge Sync could not complete", HEAD,
     _edge(HEAD, _flux(OK, error="listing HelmReleases: 403")), "Online", "Unknown"),
    ("malformed counts", HEAD, _edge(HEAD, _flux(OK, total="1")), "Online", "Unknown"),
    ("counts that are booleans", HEAD, _edge(HEAD, _flux(OK, failed=True)), "Online",
     "Unknown"),
    ("a report that is no object", HEAD, _edge(HEAD, ["objects"]), "Online", "Unknown"),
]


@pytest.mark.parametrize(("head", "edge", "state", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_derive_sync(head: str | None, edge: dict[str, Any] | None, state: str | None,
                     expected: str) -> None:
    sync = derive_sync(head, edge, state)
    assert sync.state == expected
    assert sync.reason  # always says why


def test_degraded_names_the_failing_objects_as_plain_text() -> None:
    hostile = _obj("x", "False", reason={"$ne": 1}, message="<script>", since=7)
    sync = derive_sync(HEAD, _edge(HEAD, _flux(OK, BROKEN, hostile)), "Online")
    assert sync.failing == [
        {"kind": "HelmRelease", "namespace": "flux-system", "name": "sealed-secrets",
         "reason": "InstallFailed", "message": "install retries exhausted"},
        {"kind": "Kustomization", "namespace": "flux-system", "name": "x",
         "message": "<script>"}]  # non-text fields dropped; text is data for the caller
    assert sync.applied == HEAD


@pytest.mark.parametrize(("edge", "expected"), [
    (_edge(flux=_flux(_obj("db", "True", "SealedSecret"))), True),
    (_edge(flux=_flux(_obj("db", "False", "SealedSecret"))), False),
    (_edge(flux=_flux(_obj("db", "Unknown", "SealedSecret"))), "unknown"),
    (_edge(flux=_flux(_obj("db", "True", "Kustomization"))), "unknown"),  # not that kind
    (_edge(flux=_flux(_obj("other", "True", "SealedSecret"))), "unknown"),
    (_edge(), "unknown"),
    (None, "unknown"),
])
def test_secret_unsealed(edge: dict[str, Any] | None, expected: bool | str) -> None:
    assert secret_unsealed(edge, "flux-system", "db") == expected
