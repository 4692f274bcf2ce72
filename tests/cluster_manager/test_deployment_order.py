"""dependsOn and driftDetection on an Edge deployment: the request checks, the entry, the
ordering check (model.deployment_order) and what a report says of drift and waiting."""

from __future__ import annotations

from typing import Any

import pytest

from fplus.cluster_manager.model.deployment_order import order_refusal
from fplus.cluster_manager.model.deployment_state import deployment_state
from fplus.cluster_manager.model.edge_deployments import Deployment, request_errors
from fplus.cluster_manager.rollouts.fleet_entry import request_errors as fleet_errors

CHART = "9a1e2c3d-0000-4000-8000-000000000001"
CLUSTER = "9a1e2c3d-0000-4000-8000-000000000002"
D = "0badc0de-0000-4000-8000-000000000001"


def test_depends_on_and_drift_detection_are_accepted() -> None:
    body = {"name": "historian", "chart": CHART, "dependsOn": ["broker"],
            "driftDetection": "warn"}
    assert request_errors(body) == {}
    assert fleet_errors(body | {"selector": {}}) == {}
    assert request_errors({"dependsOn": None, "driftDetection": None}, partial=True) == {}


@pytest.mark.parametrize(("extra", "field"), [
    ({"dependsOn": "broker"}, "dependsOn"),
    ({"dependsOn": [""]}, "dependsOn"),
    ({"dependsOn": [3]}, "dependsOn"),
    ({"dependsOn": ["a", "a"]}, "dependsOn"),
    ({"driftDetection": "on"}, "driftDetection"),
    ({"driftDetection": None}, "driftDetection"),
])
def test_a_bad_order_or_drift_field_is_named(extra: dict[str, object], field: str) -> None:
    assert field in request_errors({"name": "m", "chart": CHART} | extra)
    assert field in fleet_errors({"name": "m", "chart": CHART, "selector": {}} | extra)


def test_the_entry_carries_them_and_reads_back() -> None:
    made = Deployment("d", "historian", CLUSTER, CHART, depends_on=("broker",), drift="warn",
                      created_at="t")
    entry = made.entry()
    assert entry["dependsOn"] == ["broker"] and entry["driftDetection"] == "warn"
    assert Deployment.parse("d", entry) == made
    plain = Deployment("d", "m", CLUSTER, CHART, created_at="t").entry()
    assert "dependsOn" not in plain and "driftDetection" not in plain


@pytest.mark.parametrize(("graph", "start", "why"), [
    ({"h": ["b"], "b": []}, "h", None),
    ({"h": ["b", "c"], "b": ["c"], "c": []}, "h", None),
    ({"h": ["x"], "b": []}, "h", "'h' depends on 'x', which is no deployment"),
    ({"h": ["b"], "b": ["x"]}, "h", "'b' depends on 'x'"),
    ({"h": ["h"]}, "h", "cycle: h -> h"),
    ({"h": ["b"], "b": ["c"], "c": ["h"]}, "h", "cycle: h -> b -> c -> h"),
])
def test_order_refusal_names_the_unknown_deployment_or_the_cycle(
        graph: dict[str, list[str]], start: str, why: str | None) -> None:
    found = order_refusal(graph, start)
    if why is None:
        assert found is None
    else:
        assert found is not None and why in found


def _edge(**release: Any) -> dict[str, Any]:
    name = f"app-{D}"
    return {"deployments": {"releases": [name], "failed": [], "error": None},
            "flux": {"objects": [{"kind": "HelmRelease", "namespace": "e", "name": name,
                                  **release}]}}


def test_a_drifted_release_is_reported_drifted_and_still_ready() -> None:
    found = deployment_state(D, _edge(ready="True", drifted=True))
    assert (found.state, found.drifted, found.waiting) == ("ready", True, False)
    assert not deployment_state(D, _edge(ready="True")).drifted


def test_a_release_held_back_by_a_dependency_is_waiting() -> None:
    found = deployment_state(D, _edge(ready="Unknown", reason="DependencyNotReady",
                                      message="dependency 'e/broker' is not ready"))
    assert (found.state, found.waiting) == ("progressing", True)
    assert not deployment_state(D, _edge(ready="Unknown", reason="Progressing")).waiting
