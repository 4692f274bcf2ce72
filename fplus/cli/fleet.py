"""``fplus fleet …``: create, list, status and delete fleet deployments (one application on
every cluster a label selector matches)."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from fplus.jsontypes import as_list, as_object, is_object
from fplus.templating import untrusted_yaml

from .api import UUID, ApiError, ManagerApi, Row, rows
from .output import Column, by_name, emit, output_option, quiet_option
from .session import manager

COUNTS: list[Column] = [
    ("TOTAL", lambda f: f.get("total")), ("READY", lambda f: f.get("ready")),
    ("PROGRESSING", lambda f: f.get("progressing")), ("FAILED", lambda f: f.get("failed")),
    ("UNKNOWN", lambda f: f.get("unknown"))]
LIST_COLUMNS: list[Column] = [
    ("NAME", lambda f: f.get("name")), ("UUID", lambda f: f.get("uuid")),
    ("CHART", lambda f: f.get("chart")), *COUNTS, ("ERROR", lambda f: f.get("error"))]
CLUSTER_COLUMNS: list[Column] = [
    ("CLUSTER", lambda c: c.get("name")), ("UUID", lambda c: c.get("cluster")),
    ("STATE", lambda c: c.get("state")), ("COMMIT", lambda c: c.get("commit")),
    ("MESSAGE", lambda c: c.get("message"))]
PATH = "/v1/fleet-deployment"


@click.group("fleet")
def fleet() -> None:
    """Fleet deployments: one application on every cluster a label selector matches."""


def _mapping(path: Path, hint: str) -> Row:
    try:
        found: object = untrusted_yaml.load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint=hint) from None
    if not is_object(found):
        raise click.BadParameter(f"{path} must hold a mapping", param_hint=hint)
    return found


def _pairs(items: tuple[str, ...], hint: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint=hint)
        pairs.append((key, value))
    return pairs


def resolve(api: ManagerApi, ref: str) -> str:
    """The uuid of the fleet deployment named so (a uuid is taken as it is)."""
    if UUID.match(ref.lower()):
        return ref.lower()
    found = [f["uuid"] for f in _list(api) if f.get("name") == ref]
    if len(found) > 1:
        raise ApiError(409, f"{len(found)} fleet deployments are named {ref}; give a UUID")
    if not found:
        raise ApiError(404, f"no fleet deployment named {ref}")
    return str(found[0])


def _list(api: ManagerApi) -> list[Row]:
    return by_name(rows(api.call_object("GET", PATH), "fleetDeployments"))


@fleet.command("create")
@click.argument("name")
@click.option("--chart", required=True, help="UUID of the Helm chart template to deploy")
@click.option("-l", "--match", "labels", multiple=True, metavar="KEY=VALUE",
              help="select clusters with this label (repeatable: all must match)")
@click.option("--selector", "selector_file", type=click.Path(path_type=Path, dir_okay=False),
              help="YAML file of a whole selector {matchLabels, matchExpressions}")
@click.option("--cluster", "clusters", multiple=True, metavar="NAME|UUID",
              help="also deploy on this cluster, whatever its labels (repeatable)")
@click.option("--values", "values_file", type=click.Path(path_type=Path, dir_okay=False),
              help="YAML or JSON file of Helm values for every cluster")
@click.option("--override", "overrides", multiple=True, metavar="CLUSTER=FILE",
              help="values merged over --values on one cluster (repeatable)")
@click.option("--rollout", "rollout_file", type=click.Path(path_type=Path, dir_okay=False),
              help="YAML file of a rollout {maxUnavailable, steps} pacing later changes")
@output_option
@quiet_option
def create(name: str, chart: str, labels: tuple[str, ...], selector_file: Path | None,
           clusters: tuple[str, ...], values_file: Path | None, overrides: tuple[str, ...],
           rollout_file: Path | None, fmt: str) -> None:
    """Deploy the chart as NAME on every matching cluster (and those given)."""
    api = manager()
    body: Row = {"name": name, "chart": chart}
    selector = _mapping(selector_file, "--selector") if selector_file else {}
    if labels:
        selector["matchLabels"] = {**as_object(selector.get("matchLabels")),
                                   **dict(_pairs(labels, "--match"))}
    if selector or (not clusters and selector_file):
        body["selector"] = selector
    if clusters:
        body["clusters"] = [api.resolve(ref) for ref in clusters]
    if values_file is not None:
        body["values"] = _mapping(values_file, "--values")
    if overrides:
        body["overrides"] = {api.resolve(ref): _mapping(Path(file), "--override")
                             for ref, file in _pairs(overrides, "--override")}
    if rollout_file is not None:
        body["rollout"] = _mapping(rollout_file, "--rollout")
    emit(api.call_object("POST", PATH, json=body), fmt, LIST_COLUMNS)


@fleet.command("list")
@output_option
@quiet_option
def list_fleets(fmt: str) -> None:
    """Every fleet deployment with its clusters counted by state."""
    emit(_list(manager()), fmt, LIST_COLUMNS)


@fleet.command("status")
@click.argument("ref", metavar="NAME|UUID")
@output_option
@quiet_option
def status(ref: str, fmt: str) -> None:
    """One fleet deployment's roll-up: its counts, then each cluster's state."""
    api = manager()
    view = api.call_object("GET", f"{PATH}/{resolve(api, ref)}")
    if fmt != "table":
        emit(view, fmt)
        return
    emit(view, fmt, LIST_COLUMNS)
    if view.get("clusters"):
        emit(by_name(c for c in as_list(view["clusters"]) if is_object(c)), fmt,
             CLUSTER_COLUMNS, optional=("COMMIT", "MESSAGE"))


@fleet.command("delete")
@click.argument("ref", metavar="NAME|UUID")
def delete(ref: str) -> None:
    """Delete a fleet deployment; the Cluster Manager removes every deployment it made."""
    api = manager()
    fleet_uuid = resolve(api, ref)
    api.call("DELETE", f"{PATH}/{fleet_uuid}")
    click.echo(f"fleet deployment {fleet_uuid} deleted; its deployments are being removed",
               err=True)
