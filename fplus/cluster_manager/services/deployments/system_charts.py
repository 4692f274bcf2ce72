"""System charts: the Helm chart templates of the *System Helm chart* class (the edge-cluster
chart the Cluster Manager renders into every cluster's repo). No deployment, per-cluster or
fleet, may name one, and no import over the API may replace the chart one names."""

from __future__ import annotations

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient

EDGE_CLUSTER = "edge-cluster"
"""The chart of the seeded system chart template (every cluster's own HelmRelease)."""


def is_system_chart(cs: ConfigStoreClient, template: str) -> bool:
    """Whether ``template`` is a member of the *System Helm chart* class."""
    return template in cs.class_members(uuids.Class.SystemHelmChart)


def system_chart_refusal(template: str) -> str:
    """Why a deployment (per-cluster or fleet) of system chart ``template`` is refused."""
    return (f"{template} is a system chart (the Cluster Manager deploys it to every "
            "cluster), not one to deploy")


def system_chart_names(cs: ConfigStoreClient) -> set[str]:
    """The charts the system chart templates name (``edge-cluster`` always among them)."""
    names = {EDGE_CLUSTER}
    for template in cs.class_members(uuids.Class.SystemHelmChart):
        entry = cs.get_config(uuids.App.HelmChartTemplate, template)
        if isinstance(entry, dict) and isinstance(chart := entry.get("chart"), str):
            names.add(chart)
    return names
