"""``fplus fleet …``: create, list, status, diff and delete fleet deployments (one
application on every cluster a label selector matches); :func:`show_preview` prints the
preview (``?dryRun``) a change would have."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

import click
import yaml

from fplus.jsontypes import as_list, as_object, is_object
from fplus.kubenames.labels import SelectorSyntaxError, parse_selector
from fplus.templating import untrusted_yaml

from . import refs
from .api import ManagerApi, Row
from .labels import SELECTOR_HELP
from .output import Column, by_name, emit, output_option, quiet_option
from .session import manager

COUNTS: list[Column] = [
    ("TOTAL", lambda f: f.get("total")), ("READY", lambda f: f.get("ready")),
    ("PROGRESSING", lambda f: f.get("progressing")), ("FAILED", lambda f: f.get("failed")),
    ("UNKNOWN", lambda f: f.get("unknown")), ("DRIFTED", lambda f: f.get("drifted") or None)]
OPTIONAL = ("ERROR", "DRIFTED")
"""Roll-up columns shown only when some fleet deployment has a value."""
CLUSTER_COLUMNS: list[Column] = [
    ("CLUSTER", lambda c: c.get("name")), ("UUID", lambda c: c.get("cluster")),
    ("STATE", lambda c: c.get("state")), ("DRIFTED", lambda c: "yes" if c.get("drifted") else None),
    ("COMMIT", lambda c: c.get("commit")),
    ("MESSAGE", lambda c: c.get("message"))]
PATH = refs.FLEETS


def list_columns(charts: Mapping[str, str]) -> list[Column]:
    """The fleet deployment columns, its chart by name (``charts``: UUID to name)."""
    return [("NAME", lambda f: f.get("name")), ("UUID", lambda f: f.get("uuid")),
            ("CHART", lambda f: charts.get(str(f.get("chart")), f.get("chart"))), *COUNTS,
            ("ERROR", lambda f: f.get("error"))]


@click.group("fleet")
def fleet() -> None:
    """Fleet deployments: one application on every cluster a label selector matches."""


def read_mapping(path: Path, hint: str) -> Row:
    """The mapping in the YAML file ``path``; BadParameter (for option ``hint``) otherwise."""
    try:
        found: object = untrusted_yaml.load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint=hint) from None
    if not is_object(found):
        raise click.BadParameter(f"{path} must hold a mapping", param_hint=hint)
    return found


def selector(texts: tuple[str, ...], hint: str, base: Row | None = None) -> Row:
    """The selector strings ``texts`` (all must match) as ``{matchLabels?,
    matchExpressions?}``, added to ``base``; BadParameter naming the bad part."""
    found: Row = dict(base or {})
    for text in texts:
        try:
            parsed = parse_selector(text)
        except SelectorSyntaxError as exc:
            raise click.BadParameter(str(exc), param_hint=hint) from None
        if "matchLabels" in parsed:
            found["matchLabels"] = {**as_object(found.get("matchLabels")),
                                    **parsed["matchLabels"]}
        if "matchExpressions" in parsed:
            found["matchExpressions"] = [*as_list(found.get("matchExpressions")),
                                         *parsed["matchExpressions"]]
    return found


def _overrides(api: ManagerApi, items: tuple[str, ...]) -> Row:
    found: Row = {}
    for item in items:
        ref, sep, file = item.rpartition("=")
        if not sep or not ref or not file:
            raise click.BadParameter(f"{item!r} is not CLUSTER=FILE", param_hint="--override")
        found[refs.cluster(api, ref)] = read_mapping(Path(file), "--override")
    return found


def _charts(api: ManagerApi, fmt: str) -> dict[str, str]:
    """Chart template names by UUID, for a table (none needed otherwise)."""
    return refs.names(api.charts()) if fmt in ("table", "wide") else {}


F = TypeVar("F", bound=Callable[..., object])


def spec_options(chart_required: bool) -> Callable[[F], F]:
    """The options that give a fleet deployment's spec (``fleet create``, ``fleet diff``)."""
    options = [
        click.option("--chart", "chart_ref", required=chart_required, metavar="NAME|UUID",
                     help="the Helm chart template to deploy (fplus chart list)"),
        click.option("-l", "--selector", "selectors", multiple=True, metavar="SELECTOR",
                     help=f"the clusters whose labels match: {SELECTOR_HELP} (repeatable: "
                          "all must match)"),
        click.option("-f", "--file", "selector_file",
                     type=click.Path(path_type=Path, dir_okay=False),
                     help="YAML file of a whole selector {matchLabels, matchExpressions} "
                          "(with -l: both must match)"),
        click.option("--cluster", "clusters", multiple=True, metavar="NAME|UUID",
                     help="also deploy on this cluster, whatever its labels (repeatable)"),
        click.option("--values", "values_file", type=click.Path(path_type=Path, dir_okay=False),
                     help="YAML or JSON file of Helm values for every cluster"),
        click.option("--override", "overrides", multiple=True, metavar="NAME|UUID=FILE",
                     help="values merged over --values on one cluster (repeatable)"),
        click.option("--rollout", "rollout_file",
                     type=click.Path(path_type=Path, dir_okay=False),
                     help="YAML file of a rollout {maxUnavailable, steps} pacing later "
                          "changes (see docs/cli.md)"),
        click.option("--depends-on", "depends_on", multiple=True, metavar="NAME",
                     help="a deployment each cluster installs first (repeatable)"),
        click.option("--drift-detection", "drift",
                     type=click.Choice(["enabled", "warn", "disabled"]),
                     help="report objects changed on the edge (warn), and put them back "
                          "(enabled)")]

    def apply(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command
    return apply


def _spec(api: ManagerApi, chart_ref: str | None, selectors: tuple[str, ...],
          selector_file: Path | None, clusters: tuple[str, ...], values_file: Path | None,
          overrides: tuple[str, ...], rollout_file: Path | None,
          depends_on: tuple[str, ...] = (), drift: str | None = None) -> Row:
    """The fields of a spec the options give (those not given left out)."""
    body: Row = {} if chart_ref is None else {"chart": refs.chart(api, chart_ref)}
    base = read_mapping(selector_file, "--file") if selector_file else None
    chosen = selector(selectors, "--selector", base)
    if chosen or (not clusters and base is not None):
        body["selector"] = chosen
    if clusters:
        body["clusters"] = [refs.cluster(api, ref) for ref in clusters]
    if values_file is not None:
        body["values"] = read_mapping(values_file, "--values")
    if overrides:
        body["overrides"] = _overrides(api, overrides)
    if rollout_file is not None:
        body["rollout"] = read_mapping(rollout_file, "--rollout")
    if depends_on:
        body["dependsOn"] = list(depends_on)
    if drift is not None:
        body["driftDetection"] = drift
    return body


@fleet.command("create")
@click.argument("name")
@spec_options(chart_required=True)
@output_option
@quiet_option
def create(name: str, chart_ref: str, selectors: tuple[str, ...], selector_file: Path | None,
           clusters: tuple[str, ...], values_file: Path | None, overrides: tuple[str, ...],
           rollout_file: Path | None, depends_on: tuple[str, ...], drift: str | None,
           fmt: str) -> None:
    """Deploy the chart as NAME on every matching cluster (and those given)."""
    api = manager()
    body = {"name": name, **_spec(api, chart_ref, selectors, selector_file, clusters,
                                  values_file, overrides, rollout_file, depends_on, drift)}
    created = api.call_object("POST", PATH, json=body)
    emit(created, fmt, list_columns(_charts(api, fmt)), optional=OPTIONAL)


@fleet.command("diff")
@click.argument("ref", metavar="NAME|UUID")
@spec_options(chart_required=False)
@output_option
def diff(ref: str, chart_ref: str | None, selectors: tuple[str, ...],
         selector_file: Path | None, clusters: tuple[str, ...], values_file: Path | None,
         overrides: tuple[str, ...], rollout_file: Path | None, depends_on: tuple[str, ...],
         drift: str | None, fmt: str) -> None:
    """What changing the fleet deployment to the spec given would do on each cluster
    (nothing is changed); exit 1 if a cluster would refuse it."""
    api = manager()
    patch = _spec(api, chart_ref, selectors, selector_file, clusters, values_file, overrides,
                  rollout_file, depends_on, drift)
    if not patch:
        raise click.UsageError("nothing to compare: give the fields to change (--chart, "
                               "--selector, --values, ...)")
    show_preview(api.call_object("PATCH", f"{PATH}/{refs.fleet(api, ref)}",
                                 params={"dryRun": "true"}, json=patch), fmt)


def _named(cluster: object) -> str:
    found = as_object(cluster)
    return f"{found.get('name')} ({found.get('uuid')})"


def show_preview(answer: Row, fmt: str) -> None:
    """A preview (``?dryRun``): as JSON or YAML, or as text: the steps, the clusters skipped
    or waiting, then each cluster's refusal or diff. Exit 1 if a cluster refuses."""
    if fmt not in ("table", "wide"):
        emit(answer, fmt)
    else:
        plan = as_object(answer.get("plan"))
        for n, step in enumerate(as_list(plan.get("steps")), 1):
            names = [_named(c) for c in as_list(as_object(step).get("clusters"))]
            click.echo(f"step {n}: {', '.join(names) or '(no cluster)'}")
        for kind in ("skipped", "waiting"):
            for found in as_list(plan.get(kind)):
                opens = as_object(found).get("nextWindow")
                click.echo(f"{kind}: {_named(found)}: {as_object(found).get('reason')}"
                           + (f" (next window {opens})" if opens else ""))
        for cluster in as_list(answer.get("clusters")):
            shown = as_object(cluster)
            click.echo(f"=== cluster {_named(shown)}")
            refused = as_object(shown.get("refused"))
            if refused:
                click.echo(f"refused: {refused.get('field')}: {refused.get('message')}")
            click.echo(str(shown.get("diff") or ("" if refused else "no change\n")), nl=False)
            if shown.get("omitted"):
                click.echo(f"... {shown['omitted']} more diff lines not shown")
    refused_count = len(as_list(answer.get("refused")))
    if refused_count:
        click.echo(f"fplus: {refused_count} cluster(s) would refuse this change; nothing was "
                   "changed", err=True)
        raise SystemExit(1)


@fleet.command("list")
@output_option
@quiet_option
def list_fleets(fmt: str) -> None:
    """Every fleet deployment with its clusters counted by state."""
    api = manager()
    emit(by_name(refs.fleets(api)), fmt, list_columns(_charts(api, fmt)), optional=OPTIONAL)


@fleet.command("status")
@click.argument("ref", metavar="NAME|UUID")
@output_option
@quiet_option
def status(ref: str, fmt: str) -> None:
    """One fleet deployment's roll-up: its counts, then each cluster's state."""
    api = manager()
    view = api.call_object("GET", f"{PATH}/{refs.fleet(api, ref)}")
    if fmt not in ("table", "wide"):
        emit(view, fmt)
        return
    emit(view, fmt, list_columns(_charts(api, fmt)), optional=OPTIONAL)
    if view.get("clusters"):
        emit(by_name(c for c in as_list(view["clusters"]) if is_object(c)), fmt,
             CLUSTER_COLUMNS, optional=("COMMIT", "MESSAGE", "DRIFTED"))


@fleet.command("delete")
@click.argument("ref", metavar="NAME|UUID")
def delete(ref: str) -> None:
    """Delete a fleet deployment; the Cluster Manager removes every deployment it made."""
    api = manager()
    fleet_uuid = refs.fleet(api, ref)
    api.call("DELETE", f"{PATH}/{fleet_uuid}")
    click.echo(f"fleet deployment {refs.shown(api, fleet_uuid)} deleted; its deployments are "
               "being removed", err=True)
