"""The Edge deployment shape (fplus.cluster_manager.model.edge_deployments): request checks and
the entry ACS writes."""

from __future__ import annotations

import pytest

from fplus.cluster_manager.model.edge_deployments import (
    FLEET_KEY,
    Deployment,
    owner,
    request_errors,
)

CHART = "9a1e2c3d-0000-4000-8000-000000000001"
CLUSTER = "9a1e2c3d-0000-4000-8000-000000000002"
FLEET = "9a1e2c3d-0000-4000-8000-000000000003"


def test_a_well_formed_request_has_no_errors() -> None:
    assert request_errors({"name": "Machine1", "chart": CHART}) == {}
    assert request_errors({"name": "Machine1", "chart": CHART, "hostname": None,
                           "values": {"a": 1}}) == {}
    assert request_errors({"hostname": "edge-1"}, partial=True) == {}


@pytest.mark.parametrize(("body", "field"), [
    ({"chart": CHART}, "name"),
    ({"name": "", "chart": CHART}, "name"),
    ({"name": "a\nb", "chart": CHART}, "name"),
    ({"name": "x" * 254, "chart": CHART}, "name"),
    ({"name": "m", "chart": "nginx"}, "chart"),
    ({"name": "m"}, "chart"),
    ({"name": "m", "chart": CHART, "hostname": 3}, "hostname"),
    ({"name": "m", "chart": CHART, "hostname": ""}, "hostname"),
    ({"name": "m", "chart": CHART, "values": [1]}, "values"),
    ({"name": "m", "chart": CHART, "bogus": 1}, ""),
    (["m"], ""),
])
def test_each_refused_field_is_named(body: object, field: str) -> None:
    assert field in request_errors(body)


def test_the_entry_is_acs_shaped_and_floating_has_no_hostname() -> None:
    floating = Deployment("d", "Machine1", CLUSTER, CHART, created_at="2026-01-01T00:00:00Z")
    assert floating.entry() == {"name": "Machine1", "cluster": CLUSTER, "chart": CHART,
                                "createdAt": "2026-01-01T00:00:00Z"}
    pinned = Deployment("d", "M", CLUSTER, CHART, "edge-1", {"v": 1}, FLEET, "t")
    entry = pinned.entry()
    assert entry["hostname"] == "edge-1" and entry["values"] == {"v": 1}
    assert owner(entry) == FLEET and entry[FLEET_KEY] == FLEET
    assert Deployment.parse("d", entry) == pinned


def test_a_legacy_one_chart_list_reads_as_its_chart() -> None:
    legacy = Deployment.parse("d", {"name": "m", "cluster": CLUSTER, "charts": [CHART]})
    assert legacy is not None and legacy.chart == CHART
    assert Deployment.parse("d", {"name": "m", "cluster": CLUSTER,
                                  "charts": [CHART, CHART]}) is None


def test_entries_acs_could_not_deploy_parse_to_none() -> None:
    assert Deployment.parse("d", {"name": "m", "cluster": CLUSTER}) is None
    assert Deployment.parse("d", "m") is None
    assert owner({"name": "m"}) is None and owner(None) is None
