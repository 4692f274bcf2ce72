"""``fplus cluster …``: create, list, get, wait, bootstrap, approve-key, redeploy, delete
(``label`` and ``set`` are in :mod:`.cluster_edit`)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click

from fplus.bootstrap.command import bootstrap_command
from fplus.jsontypes import as_object

from . import refs
from .api import ApiError, ManagerApi, Row, rows
from .labels import SELECTOR_HELP, labels_text, parse_labels
from .output import Column, ago, by_name, emit, output_option, quiet_option
from .session import manager
from .values import read_values
from .watch import watch

LIST_COLUMNS: list[Column] = [
    ("NAME", lambda c: c.get("name")), ("UUID", lambda c: c.get("uuid")),
    ("PHASE", lambda c: c.get("phase")), ("SYNC", lambda c: c.get("syncState")),
    ("LAST SEEN", lambda c: ago(c.get("lastSeen"))),
    ("HOSTS", lambda c: c.get("hosts")), ("COMMIT", lambda c: _short(c.get("commit"))),
    ("LABELS", lambda c: labels_text(c.get("labels"))), ("ERROR", lambda c: c.get("error"))]
STATUS_COLUMNS: list[Column] = [
    ("NAME", lambda s: _name(s)), ("UUID", lambda s: s.get("uuid")),
    ("PHASE", lambda s: s.get("phase")), ("SYNC", lambda s: s.get("syncState")),
    ("READY", lambda s: s.get("ready")),
    ("LAST SEEN", lambda s: ago(as_object(s.get("edge")).get("lastSeen"))),
    ("HOSTS", lambda s: as_object(s.get("edge")).get("hosts")),
    ("COMMIT", lambda s: _short(s.get("commit"))),
    ("LABELS", lambda s: labels_text(s.get("labels"))), ("ERROR", lambda s: s.get("error"))]
WIDE = ("UUID", "COMMIT", "LABELS")
"""What only ``-o wide`` shows of clusters: the default view fits 80 columns."""
ONE_WIDE = ("UUID", "COMMIT")
"""What only ``-o wide`` shows of one cluster (its labels fit on its one line)."""
REACHED = {"ready": ("Ready", "Online", "Stale", "Offline"), "online": ("Online",)}
"""The phases that satisfy ``wait --for``: a cluster once ready stays ready when its edge
goes quiet (Stale/Offline are liveness, not setup)."""


def _name(status: Row) -> object:
    """The name as commissioned, else as requested (a configuration refused at creation)."""
    return as_object(status.get("spec")).get("name") or as_object(
        as_object(status.get("refused")).get("spec")).get("name")


def _short(commit: object) -> str:
    """A commit's first 12 characters (empty for none)."""
    return (commit if isinstance(commit, str) else "")[:12]


@click.group("cluster")
def cluster() -> None:
    """Edge clusters: request, watch, bootstrap and remove them."""


@cluster.command("create")
@click.argument("name")
@click.option("--namespace", default="fplus-edge", show_default=True,
              help="namespace on the edge for Flux objects and Edge Sync")
@click.option("--chart", "chart_ref", metavar="NAME|UUID",
              help="a Helm chart template to deploy (fplus chart list)")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE",
              help="a label of the cluster, which selectors match (repeatable)")
@click.option("--values", "values_file", metavar="FILE|-",
              help="YAML or JSON file of extra values (-: standard input)")
@click.option("--bare", is_flag=True, help="the edge manages Flux itself")
@click.option("--sealed-secrets/--no-sealed-secrets", "sealed_secrets", default=None,
              help="install the Sealed Secrets controller (default: as the template says)")
@click.option("--flux-version", metavar="VERSION",
              help="a Flux version imported centrally (import-flux) the edge applies")
@click.option("--wait", "wait_ready", is_flag=True, help="wait until it is ready")
@click.option("--timeout", type=float, default=300.0, show_default=True,
              help="seconds --wait waits")
@output_option
@quiet_option
def create(name: str, namespace: str, chart_ref: str | None, labels: tuple[str, ...],
           values_file: str | None,
           bare: bool, sealed_secrets: bool | None, flux_version: str | None,
           wait_ready: bool, timeout: float, fmt: str) -> None:
    """Request an edge cluster NAME."""
    body: Row = {"name": name, "namespace": namespace}
    if labels:
        body["labels"] = parse_labels(labels)
    api = manager()
    if chart_ref:
        body["chart"] = refs.chart(api, chart_ref)
    if bare:
        body["bare"] = True
    if sealed_secrets is not None:
        body["sealedSecrets"] = sealed_secrets
    if flux_version:
        body["fluxVersion"] = flux_version
    values = read_values(None if values_file is None else str(values_file))
    if values is not None:
        body["values"] = values
    created = api.create(body)
    if wait_ready:
        created = _wait(api, str(created["uuid"]), name, "ready", timeout)
    emit(created, fmt, STATUS_COLUMNS if wait_ready else LIST_COLUMNS, wide=WIDE)


def _phase(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A phase or sync state as the API spells it, whatever its case (``failed``: ``Failed``)."""
    return value.strip().capitalize() if value else None


@cluster.command("list")
@click.option("--phase", callback=_phase,
              help="only clusters in this phase (Pending, Failed, Provisioning, Ready, Online, "
                   "Stale, Offline, Deleting; any case)")
@click.option("--sync", callback=_phase,
              help="only clusters in this sync state (Synced, Progressing, Degraded, Unknown; "
                   "any case)")
@click.option("-s", "--search", metavar="TEXT",
              help="only clusters whose name holds TEXT or whose UUID starts with it")
@click.option("-l", "--selector", metavar="SELECTOR",
              help=f"only clusters whose labels match: {SELECTOR_HELP}")
@click.option("--limit", type=click.IntRange(1, 1000), metavar="N",
              help="one page of N clusters (the next page's --after is said on stderr)")
@click.option("--after", metavar="CURSOR", help="with --limit: the page after CURSOR")
@click.option("-w", "--watch", "follow", is_flag=True,
              help="print the list again whenever it changes (Ctrl-C ends)")
@click.option("--interval", type=click.FloatRange(min=1), default=10.0, show_default=True,
              help="with --watch: also refresh this often (phases age without writes)")
@output_option
@quiet_option
def list_clusters(phase: str | None, sync: str | None, search: str | None,
                  selector: str | None, limit: int | None, after: str | None, follow: bool,
                  interval: float, fmt: str) -> None:
    """The clusters you may see, by name."""
    if after is not None and limit is None:
        raise click.UsageError("--after needs --limit (the size of the page it continues)")
    if follow:
        if limit is not None:
            raise click.UsageError("--watch shows every cluster: leave out --limit")
        watch(manager(), phase, fmt, (LIST_COLUMNS, WIDE), interval, selector, sync=sync,
              search=search)
        return
    if limit is None:
        emit(by_name(manager().clusters(phase, selector, sync=sync, search=search)), fmt,
             LIST_COLUMNS, wide=WIDE)
        return
    page = manager().cluster_page(phase, selector, sync=sync, search=search, limit=limit,
                                  after=after)
    emit(rows(page, "clusters"), fmt, LIST_COLUMNS, wide=WIDE)
    if page.get("next"):
        click.echo(f"{page.get('total', '?')} match; next page: --limit {limit} --after "
                   f"{page['next']}", err=True)


@cluster.command("get")
@click.argument("cluster_ref", metavar="NAME|UUID")
@output_option
@quiet_option
def get(cluster_ref: str, fmt: str) -> None:
    """One cluster's status: phase, setup, what its edge reported, its labels."""
    api = manager()
    cluster_uuid = refs.cluster(api, cluster_ref)
    status = {"uuid": cluster_uuid, **api.status(cluster_uuid)}
    try:
        status["labels"] = api.cluster(cluster_uuid)[0].get("labels", {})
    except ApiError as exc:
        if exc.status not in (404, 409):  # no configuration entry: being deleted
            raise
    emit(status, fmt, STATUS_COLUMNS, wide=ONE_WIDE)


def _wait(api: ManagerApi, cluster: str, label: str, condition: str,
          timeout: float) -> Row:
    """Poll the status until ``condition``; a progress line on stderr when it is a tty."""
    deadline, last = time.monotonic() + timeout, None
    while True:
        status = {"uuid": cluster, **api.status(cluster)}
        phase = status.get("phase")
        if phase != last:
            click.echo(f"{label}: {phase}", err=True)
            last = phase
        if phase in REACHED[condition]:
            return status
        if phase == "Failed":
            raise ApiError(422, f"{label} failed: {status.get('error') or 'see its status'}")
        if time.monotonic() >= deadline:
            raise ApiError(408, f"{label} is still {phase} after {timeout:g} s")
        time.sleep(0.5)


@cluster.command("wait")
@click.argument("cluster_ref", metavar="NAME|UUID")
@click.option("--for", "condition", type=click.Choice(sorted(REACHED)), default="ready",
              show_default=True, help="ready: commissioned; online: its edge reports in")
@click.option("--timeout", type=float, default=300.0, show_default=True)
@output_option
@quiet_option
def wait(cluster_ref: str, condition: str, timeout: float, fmt: str) -> None:
    """Wait until a cluster is ready or online (exit 1 on failure or timeout)."""
    api = manager()
    emit(_wait(api, refs.cluster(api, cluster_ref), cluster_ref, condition, timeout), fmt,
         STATUS_COLUMNS, wide=ONE_WIDE)


@cluster.command("bootstrap")
@click.argument("cluster_ref", metavar="NAME|UUID")
@click.option("--script", "script_file", type=click.Path(path_type=Path, dir_okay=False),
              help="fetch the script into this file (mode 0600: it holds credentials)")
def bootstrap(cluster_ref: str, script_file: Path | None) -> None:
    """Print the one-line command to run next to the edge cluster (its URL works once)."""
    api = manager()
    url = api.bootstrap_url(refs.cluster(api, cluster_ref))
    if script_file is None:
        click.echo(bootstrap_command(url, api.base + "/v1/edge-ca", api.edge_ca()))
        return
    script = api.fetch(url)
    fd = os.open(script_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(script)
    click.echo(f"wrote {script_file}: run `sh {script_file}` where kubectl reaches the edge",
               err=True)


@cluster.command("approve-key")
@click.argument("cluster_ref", metavar="NAME|UUID")
@click.argument("fingerprint")
def approve_key(cluster_ref: str, fingerprint: str) -> None:
    """Approve the new sealing key the edge reports (its FINGERPRINT, as `cluster get`
    shows under pendingKey: compare it with the edge's controller first). Secrets are sealed
    and re-sealed to it from then on."""
    api = manager()
    answer = api.approve_key(refs.cluster(api, cluster_ref), fingerprint)
    click.echo(f"{cluster_ref}: sealing key {fingerprint} approved", err=True)
    click.echo(json.dumps(answer))


@cluster.command("redeploy")
@click.argument("cluster_ref", metavar="NAME|UUID")
@output_option
def redeploy(cluster_ref: str, fmt: str) -> None:
    """Write the cluster's repo again from its entries."""
    api = manager()
    answer = api.redeploy(refs.cluster(api, cluster_ref))
    if fmt not in ("table", "wide"):
        emit(answer, fmt)
        return
    click.echo(f"{cluster_ref}: redeploy requested at {answer.get('requested')}: the "
               "Cluster Manager commits its repo again from its entries")


@cluster.command("delete")
@click.argument("cluster_ref", metavar="NAME|UUID")
@click.option("--force", is_flag=True, help="do not wait for the edge to apply the teardown")
@click.option("--wait", "wait_gone", is_flag=True, help="wait until it is gone")
@click.option("--timeout", type=float, default=900.0, show_default=True)
def delete(cluster_ref: str, force: bool, wait_gone: bool, timeout: float) -> None:
    """Tear a cluster down: its accounts, entries and repo."""
    api = manager()
    cluster_uuid = refs.cluster(api, cluster_ref)
    api.delete(cluster_uuid, force=force)
    edge = "" if force else ": waiting for its edge to apply the teardown"
    click.echo(f"{cluster_ref}: Deleting{edge if wait_gone else ''}", err=True)
    deadline = time.monotonic() + timeout
    while wait_gone and api.exists(cluster_uuid):
        if time.monotonic() >= deadline:
            raise ApiError(408, _still_there(cluster_ref, timeout, force))
        time.sleep(0.5)
    if wait_gone:
        click.echo(f"{cluster_ref}: gone", err=True)


def _still_there(cluster_ref: str, timeout: float, force: bool) -> str:
    """Why ``delete --wait`` gave up, and what to do."""
    if force:
        return (f"{cluster_ref} is still there after {timeout:g} s, though --force does not "
                "wait for its edge; see `fplus cluster get` for what the teardown is doing")
    return (f"{cluster_ref} is still there after {timeout:g} s: its teardown waits for the "
            "edge to apply it (or for the Cluster Manager's --teardown-timeout); wait longer "
            "with --timeout, or delete it with --force to stop waiting for the edge")
