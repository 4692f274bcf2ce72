"""Drifted deployments counted for /metrics and in a fleet deployment's roll-up, from the
edges' reports (no process: a stand-in Config Store answering the searches)."""

from __future__ import annotations

import uuid
from typing import Any

from prometheus_client import generate_latest

from fplus.cluster_manager.metrics import Metrics
from fplus.cluster_manager.model.edge_deployments import DEPLOYMENT_APP
from fplus.cluster_manager.rollouts.drift_counts import DriftCounts
from fplus.cluster_manager.rollouts.fleet_expansion import expand
from fplus.cluster_manager.rollouts.fleet_service import Fleetwide, rollup

CHART = str(uuid.UUID(int=1))
A, B = (str(uuid.UUID(int=n)) for n in (10, 11))
F, P = (str(uuid.UUID(int=n)) for n in (20, 30))
CONFIGS = {A: {"name": "leeds", "labels": {}}, B: {"name": "york", "labels": {}}}


def edge(*reports: tuple[str, bool]) -> dict[str, Any]:
    """An edge's report of ``(deployment uuid, drifted)`` HelmReleases, all ready."""
    return {"deployments": {"releases": [f"app-{d}" for d, _ in reports], "failed": [],
                            "error": None},
            "flux": {"objects": [{"kind": "HelmRelease", "namespace": "e", "name": f"app-{d}",
                                  "ready": "True"} | ({"drifted": True} if drifted else {})
                                 for d, drifted in reports]}}


def world() -> Fleetwide:
    fleets = {F: {"name": "panel", "chart": CHART, "selector": {}, "createdAt": "t",
                  "driftDetection": "warn"}}
    written = {d.uuid: d.entry() for d, _ in expand(fleets, CONFIGS, {}).writes}
    by_cluster = {e["cluster"]: u for u, e in written.items()}
    deployments = written | {P: {"name": "broker", "cluster": A, "chart": CHART}}
    edges = {A: edge((by_cluster[A], False), (P, True)), B: edge((by_cluster[B], True))}
    return Fleetwide(fleets, CONFIGS, deployments, edges)


def test_the_roll_up_counts_the_clusters_reporting_it_drifted() -> None:
    found = world()
    view = rollup(F, found, found.plan())
    assert (view["ready"], view["drifted"]) == (2, 1)
    assert {c["name"]: c["drifted"] for c in view["clusters"]} == {"leeds": False, "york": True}


class Searches:
    def __init__(self, found: Fleetwide) -> None:
        self.found = found

    def search(self, app: str, _query: Any, select: Any) -> dict[str, Any]:
        if app == DEPLOYMENT_APP:
            return {u: {k: e.get(k) for k in select} for u, e in self.found.deployments.items()}
        return self.found.edges


def test_the_metric_counts_every_drifted_deployment_a_persons_too() -> None:
    counts = DriftCounts(Searches(world()))  # type: ignore[arg-type]
    assert counts.drifted() == 2
    metrics = Metrics()
    metrics.track_drift(counts.drifted)
    assert b"cluster_manager_deployments_drifted 2.0" in generate_latest(metrics.registry)
