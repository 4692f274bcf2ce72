"""A fleet deployment's dependsOn and driftDetection: carried into each Edge deployment
it makes (a change is a change), and checked on each cluster it targets (pure)."""

from __future__ import annotations

import uuid
from typing import Any

from fplus.cluster_manager.model.edge_deployments import Deployment
from fplus.cluster_manager.rollouts.fleet_entry import revision
from fplus.cluster_manager.rollouts.fleet_expansion import expand
from fplus.cluster_manager.rollouts.fleet_order import fleet_order_refusal

CHART = str(uuid.UUID(int=1))
A, B = (str(uuid.UUID(int=n)) for n in (10, 11))
F, G, P = (str(uuid.UUID(int=n)) for n in (20, 21, 30))
CONFIGS = {A: {"name": "a", "labels": {"site": "leeds"}},
           B: {"name": "b", "labels": {"site": "york"}}}


def fleet(name: str = "historian", **over: Any) -> dict[str, Any]:
    return {"name": name, "chart": CHART, "selector": {}, "createdAt": "2026-01-01"} | over


def test_each_deployment_carries_the_fleet_deployments_order_and_drift() -> None:
    plan = expand({F: fleet(dependsOn=["broker"], driftDetection="warn")}, CONFIGS, {})
    made = {d.cluster: d for d, _ in plan.writes}
    assert set(made) == {A, B}
    assert all(d.depends_on == ("broker",) and d.drift == "warn" for d in made.values())
    entry = made[A].entry()
    assert entry["dependsOn"] == ["broker"] and entry["driftDetection"] == "warn"


def test_a_changed_mode_rewrites_the_deployment_and_is_a_new_revision() -> None:
    before = expand({F: fleet(driftDetection="warn")}, CONFIGS, {})
    stored = {d.uuid: d.entry() for d, _ in before.writes}
    assert not expand({F: fleet(driftDetection="warn")}, CONFIGS, stored).writes
    after = expand({F: fleet(driftDetection="enabled")}, CONFIGS, stored)
    assert {d.drift for d, new in after.writes if not new} == {"enabled"}
    assert revision(fleet(driftDetection="warn")) != revision(fleet(driftDetection="enabled"))


def _refusal(fleets: dict[str, Any], deployments: dict[str, Any]) -> str | None:
    plan = expand(fleets, CONFIGS, deployments)
    return fleet_order_refusal(F, fleets, deployments, plan.targets)


def test_a_name_on_every_cluster_or_made_by_another_fleet_deployment_is_known() -> None:
    person = Deployment(P, "broker", A, CHART).entry()
    assert _refusal({F: fleet(dependsOn=["broker"], selector={"matchLabels": {"site": "leeds"}})},
                    {P: person}) is None
    assert _refusal({F: fleet(dependsOn=["broker"]), G: fleet("broker")}, {}) is None


def test_a_name_missing_on_one_targeted_cluster_is_refused_naming_it() -> None:
    person = Deployment(P, "broker", A, CHART).entry()
    why = _refusal({F: fleet(dependsOn=["broker"])}, {P: person})
    assert why is not None and f"on cluster {B}" in why and "'broker'" in why


def test_a_cycle_through_another_fleet_deployment_is_refused_naming_it() -> None:
    why = _refusal({F: fleet(dependsOn=["broker"]),
                    G: fleet("broker", dependsOn=["historian"])}, {})
    assert why is not None and "historian -> broker -> historian" in why
    assert _refusal({F: fleet(dependsOn=["historian"])}, {}) is not None
    assert _refusal({F: fleet()}, {}) is None
