"""One Edge deployment's state from its edge's report (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from fplus.cluster_manager.model.deployment_state import deployment_state

D = "0badc0de-0000-4000-8000-000000000001"
RELEASE = f"edge-cluster-{D}"


def edge(ready: str | None = None, *, releases: tuple[str, ...] = (RELEASE,),
         failed: list[dict[str, Any]] | None = None, error: str | None = None,
         **extra: str) -> dict[str, Any]:
    objects = [] if ready is None else [
        {"kind": "HelmRelease", "namespace": "e", "name": RELEASE, "ready": ready, **extra}]
    return {"deployments": {"releases": list(releases), "failed": failed or [],
                            "error": error},
            "flux": {"objects": objects}}


@pytest.mark.parametrize(("report", "state", "message", "commit"), [
    (None, "unknown", "the edge has not reported its deployments", None),
    ({"lastSeen": "x"}, "unknown", "the edge has not reported its deployments", None),
    (edge("True", revision="0.2.0"), "ready", None, "0.2.0"),
    (edge("False", message="install failed"), "failed", "install failed", None),
    (edge("Unknown", reason="Progressing"), "progressing", "Progressing", None),
    (edge(releases=(), failed=[{"uuid": D, "error": "no chart"}]), "failed", "no chart", None),
    (edge(), "progressing", "applied; Flux has not reported the HelmRelease", None),
    (edge(releases=(), error="forbidden"), "failed", "Edge Sync could not apply: forbidden",
     None),
    (edge(releases=()), "unknown", "the edge has not applied it yet", None),
])
def test_states(report: dict[str, Any] | None, state: str, message: str | None,
                commit: str | None) -> None:
    found = deployment_state(D, report)
    assert (found.state, found.message, found.commit) == (state, message, commit)


def test_another_deployments_release_does_not_count() -> None:
    other = edge("True")
    other["flux"]["objects"][0]["name"] = "edge-cluster-0badc0de-0000-4000-8000-000000000002"
    other["deployments"]["releases"] = []
    assert deployment_state(D, other).state == "unknown"
