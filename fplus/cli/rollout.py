"""``fplus rollout create|list|status|pause|resume|abort|rollback|start-now|promote``: paced
rollouts, of a fleet deployment (named by the fleet deployment, by name or uuid) or of a
change to many clusters (a cluster rollout: a ``fluxVersion`` or a Flux template, named by
its name or uuid), with their health gates."""

from __future__ import annotations

from pathlib import Path

import click

from fplus.jsontypes import as_list, is_object, strings

from . import refs
from .api import Row
from .fleet import read_mapping, selector, show_preview
from .labels import SELECTOR_HELP
from .output import Column, emit, output_option, quiet_option
from .session import manager

PATH = refs.ROLLOUTS
HEAD: list[Column] = [
    ("NAME", lambda r: r.get("name")), ("UUID", lambda r: r.get("uuid")),
    ("KIND", lambda r: r.get("kind")),
    ("STATE", lambda r: r.get("state")),
    ("STEP", lambda r: _step_of(r)),
    ("UPDATED", lambda r: len(as_list(r.get("updated")))),
    ("REQUESTED", lambda r: r.get("pendingRequest")), ("MESSAGE", lambda r: r.get("message"))]
STEPS: list[Column] = [
    ("STEP", lambda s: s["n"]), ("STATE", lambda s: s.get("state")),
    ("CLUSTERS", lambda s: len(as_list(s.get("clusters")))),
    ("STARTED", lambda s: _started(s))]
FAILED: list[Column] = [("FAILED", lambda f: f.get("cluster")),
                        ("MESSAGE", lambda f: f.get("message"))]
SKIPPED: list[Column] = [("SKIPPED", lambda s: s.get("cluster")),
                         ("GIVEN", lambda s: s.get("given") or "not yet"),
                         ("REASON", lambda s: s.get("reason"))]
WAITING: list[Column] = [("WAITING", lambda w: w.get("cluster")),
                         ("NEXT WINDOW", lambda w: w.get("nextWindow") or "none known")]
GATES = {"min_ready_seconds": "minReadySeconds", "max_failures": "maxFailures",
         "progress_deadline_seconds": "progressDeadlineSeconds", "offline": "offline",
         "on_failure": "onFailure"}
"""The health gate options of ``rollout create`` -> their field of the rollout block."""


def _started(step: Row) -> str:
    """``1 of 2``: how many of the step's clusters were given the change."""
    members = set(strings(step.get("clusters")))
    started = set(strings(step.get("started")))
    return f"{len(started & members)} of {len(members)}"


def _step_of(rollout: Row) -> str:
    """``3/5``: the step a rollout is at (from 1) of its steps."""
    step = rollout.get("step", 0)
    at = step + 1 if isinstance(step, int) else "?"
    return f"{at}/{len(as_list(rollout.get('steps'))) or '-'}"


@click.group("rollout")
def rollout() -> None:
    """Paced rollouts (a fleet deployment's, or a fluxVersion or Flux template given to many
    clusters): create, list, follow, pause, resume, abort or roll them back, start clusters
    outside their maintenance windows now."""


def _count(text: str) -> int | str:
    return int(text) if text.isdigit() else text


def _step(text: str, pause: str | None) -> Row:
    """``N``, ``P%`` or a selector string, with the ``--pause`` of every step."""
    clusters: object = _count(text) if text.isdigit() or text.endswith("%") else selector(
        (text,), "--step")
    step: Row = {"clusters": clusters}
    if pause == "manual":
        step["pause"] = pause
    elif pause is not None:
        try:
            seconds = float(pause)
        except ValueError:
            raise click.BadParameter(f"{pause!r} is neither manual nor seconds",
                                     param_hint="--pause") from None
        step["pause"] = int(seconds) if seconds.is_integer() else seconds
    return step


@rollout.command("create")
@click.argument("name")
@click.option("--flux-version", metavar="VERSION", help="the fluxVersion to give (e.g. v2.7.5)")
@click.option("--template", "template_file", type=click.Path(path_type=Path, dir_okay=False),
              help="YAML file of the Flux template to give (the default once complete)")
@click.option("-l", "--selector", "selectors", multiple=True, metavar="SELECTOR",
              help=f"the clusters whose labels match: {SELECTOR_HELP} (repeatable: all must "
                   "match)")
@click.option("--cluster", "clusters", multiple=True, metavar="NAME|UUID",
              help="also this cluster, whatever its labels (repeatable); neither this nor "
                   "--selector: every cluster")
@click.option("--step", "steps", multiple=True, metavar="N|P%|SELECTOR",
              help="the next step's clusters (repeatable; the rest form a last step)")
@click.option("--pause", metavar="manual|SECONDS",
              help="after each step is ready: until a resume, or that many seconds")
@click.option("--max-unavailable", metavar="N|P%",
              help="at most this many clusters of a step changed and not ready yet")
@click.option("--min-ready-seconds", type=click.IntRange(0), metavar="SECONDS",
              help="a cluster counts as done once ready that long without a break")
@click.option("--max-failures", metavar="N|P%",
              help="failed clusters tolerated before the rollout halts (default 0)")
@click.option("--progress-deadline-seconds", type=click.IntRange(1), metavar="SECONDS",
              help="a step that makes no progress that long halts")
@click.option("--offline", type=click.Choice(["wait", "skip"]),
              help="an edge that stopped reporting: wait for it (default) or skip it until "
                   "it reports again")
@click.option("--on-failure", type=click.Choice(["halt", "rollback"]),
              help="on a failure past --max-failures or a deadline: halt (default) or roll "
                   "every changed cluster back")
@click.option("--rollout", "rollout_file", type=click.Path(path_type=Path, dir_okay=False),
              help="YAML file of the whole rollout block (the options above override it)")
@click.option("--dry-run", is_flag=True,
              help="show the steps and each cluster's diff (or refusal); create nothing")
@output_option
@quiet_option
def create(name: str, flux_version: str | None, template_file: Path | None,
           selectors: tuple[str, ...], clusters: tuple[str, ...], steps: tuple[str, ...],
           pause: str | None, max_unavailable: str | None, rollout_file: Path | None,
           dry_run: bool, fmt: str, **gates: object) -> None:
    """Give many clusters a fluxVersion or a Flux template, step by step, gated on health."""
    if (flux_version is None) == (template_file is None):
        raise click.UsageError("give exactly one of --flux-version and --template")
    api = manager()
    change = ({"fluxVersion": flux_version} if flux_version is not None
              else {"fluxTemplate": read_mapping(template_file, "--template")}
              if template_file is not None else {})
    body: Row = {"name": name, "change": change}
    if selectors:
        body["selector"] = selector(selectors, "--selector")
    if clusters:
        body["clusters"] = [refs.cluster(api, ref) for ref in clusters]
    paced: Row = dict(read_mapping(rollout_file, "--rollout")) if rollout_file else {}
    if steps:
        paced["steps"] = [_step(text, pause) for text in steps]
    if max_unavailable is not None:
        paced["maxUnavailable"] = _count(max_unavailable)
    for option, field in GATES.items():
        value = gates.get(option)
        if value is not None:
            paced[field] = _count(value) if option == "max_failures" and isinstance(
                value, str) else value
    body["rollout"] = paced
    if dry_run:
        show_preview(api.call_object("POST", PATH, params={"dryRun": "true"}, json=body), fmt)
        return
    emit(api.call_object("POST", PATH, json=body), fmt, HEAD,
         optional=("REQUESTED", "MESSAGE"))


@rollout.command("list")
@output_option
@quiet_option
def list_rollouts(fmt: str) -> None:
    """Every rollout of both kinds, with its state and step."""
    emit(refs.rollouts(manager()), fmt, HEAD, optional=("REQUESTED", "MESSAGE"))


@rollout.command("status")
@click.argument("ref", metavar="NAME|UUID")
@output_option
def status(ref: str, fmt: str) -> None:
    """The rollout: its state and step, then each step, then the failed clusters."""
    api = manager()
    view = api.call_object("GET", f"{PATH}/{refs.rollout(api, ref)}")
    if fmt not in ("table", "wide"):
        emit(view, fmt)
        return
    emit(view, fmt, [c for c in HEAD if c[0] != "MESSAGE"], optional=("REQUESTED",))
    if view.get("message"):  # a sentence or two: said whole, below the table
        click.echo(f"\n{view['message']}\n")
    steps = [{**s, "n": n + 1}
             for n, s in enumerate(s for s in as_list(view.get("steps")) if is_object(s))]
    if steps:
        emit(steps, fmt, STEPS)
    if view.get("reason"):
        click.echo(f"\nwhy: {view['reason']}\n")
    for key, columns in (("failed", FAILED), ("skipped", SKIPPED), ("waiting", WAITING)):
        if view.get(key):
            emit(view[key], fmt, columns)


def _request(action: str, ref: str, body: Row | None = None) -> tuple[str, Row]:
    """Ask for ``action`` on the rollout ``ref``: how to name it, and the answer."""
    api = manager()
    rollout_uuid = refs.rollout(api, ref)
    done = api.call_object("POST", f"{PATH}/{rollout_uuid}/{action}", json=body)
    return f"rollout {refs.shown(api, rollout_uuid)}", done


@rollout.command("pause")
@click.argument("ref", metavar="NAME|UUID")
def pause(ref: str) -> None:
    """Stop giving more clusters the new revision (those that have it keep it)."""
    named, _ = _request("pause", ref)
    click.echo(f"{named}: pause requested", err=True)


@rollout.command("resume")
@click.argument("ref", metavar="NAME|UUID")
def resume(ref: str) -> None:
    """Go on after a pause (a manual one: with the next step) or look again after a halt."""
    named, _ = _request("resume", ref)
    click.echo(f"{named}: resume requested", err=True)


@rollout.command("abort")
@click.argument("ref", metavar="NAME|UUID")
def abort(ref: str) -> None:
    """End the rollout, leaving every cluster as it is."""
    named, done = _request("abort", ref)
    click.echo(f"{named}: abort requested; {done.get('message')}", err=True)


@rollout.command("rollback")
@click.argument("ref", metavar="NAME|UUID")
def rollback(ref: str) -> None:
    """Give every cluster the rollout changed what it had before (the previous revision of
    the fleet deployment, or the previous fluxVersion or Flux template); not for a Complete
    rollout (recorded in the audit log)."""
    named, done = _request("rollback", ref)
    click.echo(f"{named}: rollback requested; {done.get('message')}", err=True)


@rollout.command("start-now")
@click.argument("ref", metavar="NAME|UUID")
@click.argument("clusters", nargs=-1, required=True, metavar="CLUSTER_NAME|UUID...")
def start_now(ref: str, clusters: tuple[str, ...]) -> None:
    """Start these clusters of the rollout now, outside their maintenance windows
    (recorded in the audit log)."""
    api = manager()
    named, _ = _request("start-now", ref, {"clusters": [refs.cluster(api, c) for c in clusters]})
    click.echo(f"{named}: start now requested for {', '.join(clusters)}", err=True)


@rollout.command("promote")
@click.argument("ref", metavar="NAME|UUID")
def promote(ref: str) -> None:
    """Make a complete template rollout's candidate the default Flux template (``POST
    /v1/rollout/:r/promote``: written as you, so it needs write access to the Flux template
    app; recorded in the audit log); the Cluster Manager then removes the rollout's pins."""
    named, _ = _request("promote", ref)
    click.echo(f"{named}: its template is the default; the Cluster Manager removes the pins",
               err=True)
