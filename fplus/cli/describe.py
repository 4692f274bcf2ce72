"""``fplus cluster describe``: one cluster on one page, as ``kubectl describe`` shows an
object: its configuration, status, deployments, sealing key and recent history, each read
from the Cluster Manager's API (``-o json|yaml``: the same, as one object)."""

from __future__ import annotations

import click
import yaml

from fplus.jsontypes import as_object

from . import refs
from .api import ApiError, ManagerApi, Row, rows
from .audit import COLUMNS as AUDIT_COLUMNS
from .deployments import columns as deployment_columns
from .labels import labels_text
from .output import FORMATS, ago, by_name, console, emit, table
from .session import manager

HISTORY = 10
"""How many of the newest audit entries the page shows."""
HISTORY_COLUMNS = [("WHEN", lambda r: ago(r.get("time"))),
                   *(c for c in AUDIT_COLUMNS if c[0] in ("PRINCIPAL", "ACTION", "OUTCOME"))]
"""The audit log's columns, its time as an age and without the target (the cluster)."""


def _configuration(api: ManagerApi, cluster: str) -> Row:
    try:
        return api.cluster(cluster)[0]
    except ApiError as exc:
        if exc.status not in (404, 409):  # no configuration entry: being deleted
            raise
        return {}


def _history(api: ManagerApi, cluster: str) -> list[Row]:
    try:
        page = api.call_object("GET", "/v1/audit", params={"cluster": cluster,
                                                           "limit": str(HISTORY)})
    except ApiError as exc:
        if exc.status != 403:  # the audit log is not everyone's to read
            raise
        return []
    return rows(page, "entries")


def gather(api: ManagerApi, cluster: str) -> Row:
    """``{configuration, status, deployments, history}`` of the cluster."""
    return {"uuid": cluster, "configuration": _configuration(api, cluster),
            "status": api.status(cluster), "deployments": by_name(api.deployments(cluster)),
            "history": _history(api, cluster)}


def _fields(pairs: list[tuple[str, object]]) -> str:
    width = max(len(key) for key, _ in pairs) + 2
    return "\n".join(f"{key + ':':<{width}}{'-' if value in (None, '') else value}"
                     for key, value in pairs)


def _page(found: Row, charts: dict[str, str]) -> str:
    """The text of the page, up to the tables."""
    config, status = as_object(found["configuration"]), as_object(found["status"])
    edge, key = as_object(status.get("edge")), as_object(status.get("sealingKey"))
    pending = as_object(status.get("pendingKey"))
    chart = config.get("chart")
    head = _fields([
        ("Name", config.get("name") or as_object(status.get("spec")).get("name")),
        ("UUID", found["uuid"]), ("Labels", labels_text(config.get("labels"))),
        ("Phase", status.get("phase")), ("Sync", status.get("syncState")),
        ("Error", status.get("error")),
        ("Last seen", ago(edge.get("lastSeen"))), ("Hosts", edge.get("hosts")),
        ("Commit", status.get("commit"))])
    setup = _fields([
        ("Namespace", config.get("namespace")),
        ("Chart", charts.get(str(chart), chart) if chart else None),
        ("Flux version", config.get("fluxVersion")),
        ("Sealed Secrets", config.get("sealedSecrets")), ("Bare", config.get("bare"))])
    values = config.get("values")
    shown = yaml.safe_dump(values, sort_keys=True).rstrip() if values else "-"
    sealing = _fields([
        ("Fingerprint", key.get("fingerprint") or key.get("error")),
        ("Pinned", f"{key.get('pinnedAt')} by {key.get('pinnedBy')}" if key.get("pinnedAt")
         else None),
        ("Waiting approval", pending.get("fingerprint"))])
    return "\n\n".join([head, "Configuration:", setup, "Values:", shown,
                        "Sealing key:", sealing])


@click.command("describe")
@click.argument("cluster_ref", metavar="NAME|UUID")
@click.option("-o", "--output", "fmt", type=click.Choice([f for f in FORMATS if f != "wide"]),
              default="table", show_default=True, help="how to print it (table: one page)")
def describe(cluster_ref: str, fmt: str) -> None:
    """One cluster on one page: its configuration, status, deployments, sealing key and
    recent history (the newest changes made to it)."""
    api = manager()
    found = gather(api, refs.cluster(api, cluster_ref))
    if fmt != "table":
        emit(found, fmt)
        return
    out = console(fmt)
    out.print(_page(found, refs.names(api.charts())), highlight=False, markup=False)
    deployments = found["deployments"]
    out.print("\nDeployments:")
    out.print(table(deployments, deployment_columns(api, fmt), optional=("FLEET",))
              if deployments else "-")
    out.print(f"\nHistory (newest {HISTORY}):")
    history = found["history"]
    out.print(table(history, HISTORY_COLUMNS) if history else "-")
