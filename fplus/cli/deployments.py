"""``fplus deploy …`` (a cluster's Edge deployments: create, list, get, move, delete),
``fplus chart list`` (the Helm chart templates they deploy) and ``fplus chart import`` (a
chart into the shared charts repo)."""

from __future__ import annotations

from pathlib import Path

import click

from . import refs
from .api import ManagerApi
from .chart_archive import read_archive
from .output import Column, Command, by_name, emit, output_option, quiet_option
from .session import manager
from .values import read_values


def columns(api: ManagerApi, fmt: str) -> list[Column]:
    """A deployment's columns, its chart and fleet deployment by name (looked up only for
    a table)."""
    table = fmt in ("table", "wide")
    charts = refs.names(api.charts()) if table else {}
    fleets = refs.names(refs.fleets(api)) if table else {}
    return [("NAME", lambda d: d.get("name")), ("UUID", lambda d: d.get("uuid")),
            ("CHART", lambda d: charts.get(str(d.get("chart")), d.get("chart"))),
            ("HOST", lambda d: d.get("hostname") or "(floating)"),
            ("FLEET", lambda d: fleets.get(str(d.get("fleetDeployment")),
                                           d.get("fleetDeployment"))),
            ("STATE", lambda d: d.get("state")),
            ("DRIFTED", lambda d: "yes" if d.get("drifted") else None),
            ("WAITING ON", lambda d: ", ".join(map(str, d.get("waitingOn") or ())) or None)]
OPTIONAL = ("FLEET", "STATE", "DRIFTED", "WAITING ON")
"""Columns shown only when some deployment has a value (a state only in a listing)."""
CHART_COLUMNS: list[Column] = [
    ("NAME", lambda c: c.get("name")), ("UUID", lambda c: c.get("uuid")),
    ("CHART", lambda c: c.get("chart")), ("SYSTEM", lambda c: "yes" if c.get("system") else "")]
IMPORTED_COLUMNS: list[Column] = [("NAME", lambda c: c.get("name")),
                                  ("VERSION", lambda c: c.get("version"))]


def cluster_option(fn: Command) -> Command:
    """``-c/--cluster NAME|UUID``, required."""
    return click.option("-c", "--cluster", "cluster_ref", required=True, metavar="NAME|UUID",
                        help="the cluster")(fn)


@click.group("deploy")
def deploy() -> None:
    """Edge deployments: Helm chart templates on a cluster, on one host or floating."""


@deploy.command("create")
@cluster_option
@click.option("--name", required=True, help="the deployment's name (one per cluster)")
@click.option("--chart", "chart_ref", required=True, metavar="NAME|UUID",
              help="the Helm chart template (fplus chart list)")
@click.option("--host", help="a host the cluster reported (left out: floating, on any host)")
@click.option("--values", "values_source", metavar="FILE|-",
              help="YAML or JSON file of values (-: standard input)")
@click.option("--depends-on", "depends_on", multiple=True, metavar="NAME",
              help="a deployment of the cluster to install first (repeatable)")
@click.option("--drift-detection", "drift", type=click.Choice(["enabled", "warn", "disabled"]),
              help="report objects changed on the edge (warn), and put them back (enabled)")
@output_option
@quiet_option
def create(cluster_ref: str, name: str, chart_ref: str, host: str | None,
           values_source: str | None, depends_on: tuple[str, ...], drift: str | None,
           fmt: str) -> None:
    """Deploy a chart template on a cluster."""
    values = read_values(values_source)
    api = manager()
    body: dict[str, object] = {"name": name, "chart": refs.chart(api, chart_ref),
                               "hostname": host}
    if values is not None:
        body["values"] = values
    if depends_on:
        body["dependsOn"] = list(depends_on)
    if drift is not None:
        body["driftDetection"] = drift
    emit(api.create_deployment(refs.cluster(api, cluster_ref), body), fmt, columns(api, fmt),
         OPTIONAL)


@deploy.command("list")
@cluster_option
@output_option
@quiet_option
def list_deployments(cluster_ref: str, fmt: str) -> None:
    """The cluster's deployments (those of fleet deployments too)."""
    api = manager()
    emit(by_name(api.deployments(refs.cluster(api, cluster_ref))), fmt, columns(api, fmt),
         OPTIONAL)


@deploy.command("get")
@cluster_option
@click.argument("deployment_ref", metavar="NAME|UUID")
@output_option
@quiet_option
def get(cluster_ref: str, deployment_ref: str, fmt: str) -> None:
    """One deployment (-o yaml shows its values)."""
    api = manager()
    cluster = refs.cluster(api, cluster_ref)
    found, _ = api.deployment(cluster, refs.deployment(api, cluster, deployment_ref))
    emit(found, fmt, columns(api, fmt), OPTIONAL)


@deploy.command("move")
@cluster_option
@click.argument("deployment_ref", metavar="NAME|UUID")
@click.option("--host", help="the reported host to move it to")
@click.option("--floating", is_flag=True, help="let it run on any host")
@output_option
@quiet_option
def move(cluster_ref: str, deployment_ref: str, host: str | None, floating: bool,
         fmt: str) -> None:
    """Move a deployment to another host, or make it floating."""
    if (host is None) == (not floating):
        raise click.UsageError("give --host HOST or --floating")
    api = manager()
    cluster = refs.cluster(api, cluster_ref)
    deployment = refs.deployment(api, cluster, deployment_ref)
    _, etag = api.deployment(cluster, deployment)  # a change meanwhile answers 412
    emit(api.patch_deployment(cluster, deployment, {"hostname": host}, etag), fmt,
         columns(api, fmt), OPTIONAL)


@deploy.command("delete")
@cluster_option
@click.argument("deployment_ref", metavar="NAME|UUID")
def delete(cluster_ref: str, deployment_ref: str) -> None:
    """Delete a deployment (Edge Sync uninstalls it)."""
    api = manager()
    cluster = refs.cluster(api, cluster_ref)
    api.delete_deployment(cluster, refs.deployment(api, cluster, deployment_ref))
    click.echo(f"{deployment_ref}: deleted from cluster {refs.shown(api, cluster)}", err=True)


@click.group("chart")
def chart() -> None:
    """Helm chart templates, which deployments name."""


@chart.command("list")
@click.option("--imported", is_flag=True,
              help="list the charts in the shared charts repo (NAME VERSION) instead")
@output_option
@quiet_option
def list_charts(imported: bool, fmt: str) -> None:
    """The chart templates (system ones are not for deployments), or the imported charts."""
    if not imported:
        emit(by_name(manager().charts()), fmt, CHART_COLUMNS)
        return
    charts = manager().imported_charts()
    if fmt == "uuid":  # -q: the names, which are what templates name
        for found in charts:
            click.echo(found["name"])
        return
    emit(charts, fmt, IMPORTED_COLUMNS)


@chart.command("import")
@click.argument("source", type=click.Path(exists=True, path_type=Path),
                metavar="CHART.tgz|DIR")
@click.option("--template", metavar="NAME",
              help="also make a chart template of this name for it (deployments name it)")
def import_chart(source: Path, template: str | None) -> None:
    """Import a Helm chart (a `helm package` archive, or a chart directory, packed here)
    into the shared charts repo every edge installs from."""
    done = manager().import_chart(read_archive(source), template)
    what = f"chart {done['chart']} {done['version']}"
    click.echo(f"imported {what} ({done['files']} files) at {done['commit']}"
               if done["changed"] else f"{what} is already imported as it is")
    if done.get("template"):
        click.echo(f"chart template {template} {done['template']}")
    if done.get("retried"):
        click.echo(f"{done['retried']} cluster(s) that waited for an import will try again",
                   err=True)
