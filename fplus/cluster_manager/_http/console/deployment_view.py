"""What the console shows of Edge deployments: a cluster's deployments with their state from
the edge's report, the charts and hosts a deploy form offers, the cluster's labels, and the
``values`` box of a form read as YAML or JSON."""

from __future__ import annotations

import yaml

from fplus.templating import untrusted_yaml

from ...model.apps_and_roles import CONFIG_APP
from ...services.charts.chart_templates import ChartService, ChartTemplate
from ...services.deployments.cluster_deployments import DeploymentService, reported_hosts
from ..context import services


def parse_values(text: str) -> tuple[object, str | None]:
    """The form's ``values`` (None when empty) and why they were refused, if they were."""
    if not text.strip():
        return None, None
    try:
        return untrusted_yaml.load(text), None
    except untrusted_yaml.YAMLRefused as exc:
        return None, f"values refused: {exc}"
    except yaml.YAMLError as exc:
        return None, f"values are not YAML or JSON: {str(exc).splitlines()[0]}"


def deployable_charts(templates: list[ChartTemplate] | None = None) -> list[ChartTemplate]:
    """The Helm chart templates a person may deploy (system charts left out), by name."""
    found = ChartService(services().cs).templates() if templates is None else templates
    return [c for c in found if not c["system"]]


def cluster_labels(cluster: str) -> dict[str, str]:
    """The cluster's labels as its configuration entry holds them."""
    config = services().cs.get_config(CONFIG_APP, cluster)
    labels = config.get("labels") if isinstance(config, dict) else None
    if not isinstance(labels, dict):
        return {}
    return {k: v for k, v in labels.items() if isinstance(v, str)}


def cluster_deployments(cluster: str) -> dict[str, object]:
    """``{rows, charts, hosts}`` for the cluster page: each deployment with its chart's
    name, host, state and message, whether it drifted and what it waits on, and fleet
    deployment if a fleet owns it."""
    cs = services().cs
    charts = ChartService(cs).templates()
    names = {c["uuid"]: c["name"] for c in charts}
    rows = []
    for d in DeploymentService(cs).of_cluster(cluster):  # with state, drifted, waitingOn
        rows.append({**d, "chartName": names.get(str(d["chart"])) or d["chart"],
                     "message": d.get("message") or ""})
    return {"rows": rows, "charts": deployable_charts(charts),
            "hosts": reported_hosts(cs, cluster)}
