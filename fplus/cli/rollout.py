"""``fplus rollout create|list|status|pause|resume|abort``: paced rollouts, of a fleet
deployment (named by the fleet deployment, by name or uuid) or of a change to many clusters
(a cluster rollout: a ``fluxVersion`` or a Flux template, named by its name or uuid)."""

from __future__ import annotations

from pathlib import Path

import click

from fplus.jsontypes import as_list, is_object
from fplus.kubenames.labels import SelectorSyntaxError, parse_selector

from .api import UUID, ApiError, ManagerApi, Row, rows
from .fleet import _mapping
from .fleet import resolve as resolve_fleet
from .output import Column, emit, output_option, quiet_option
from .session import manager

PATH = "/v1/rollout"
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
    ("STARTED", lambda s: len(as_list(s.get("started"))))]
FAILED: list[Column] = [("FAILED", lambda f: f.get("cluster")),
                        ("MESSAGE", lambda f: f.get("message"))]


def _step_of(rollout: Row) -> str:
    """``3/5``: the step a rollout is at (from 1) of its steps."""
    step = rollout.get("step", 0)
    at = step + 1 if isinstance(step, int) else "?"
    return f"{at}/{len(as_list(rollout.get('steps'))) or '-'}"


@click.group("rollout")
def rollout() -> None:
    """Paced rollouts (a fleet deployment's, or a fluxVersion or Flux template given to many
    clusters): create, list, follow, pause, resume or abort them."""


def resolve(api: ManagerApi, ref: str) -> str:
    """The uuid of the rollout named so: a uuid as it is, a rollout's name, else the fleet
    deployment's (whose rollout it is)."""
    if UUID.match(ref.lower()):
        return ref.lower()
    found = [r["uuid"] for r in _list(api) if r.get("name") == ref]
    if len(found) > 1:
        raise ApiError(409, f"{len(found)} rollouts are named {ref}; give a UUID")
    return str(found[0]) if found else resolve_fleet(api, ref)


def _list(api: ManagerApi) -> list[Row]:
    return rows(api.call_object("GET", PATH), "rollouts")


def _selector(text: str, hint: str) -> Row:
    try:
        return parse_selector(text)
    except SelectorSyntaxError as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None


def _count(text: str) -> int | str:
    return int(text) if text.isdigit() else text


def _step(text: str, pause: str | None) -> Row:
    """``N``, ``P%`` or a selector string, with the ``--pause`` of every step."""
    clusters: object = _count(text) if text.isdigit() or text.endswith("%") else _selector(
        text, "--step")
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
@click.option("--selector", metavar="SELECTOR",
              help="the clusters whose labels match (e.g. site=leeds,tier!=test)")
@click.option("--cluster", "clusters", multiple=True, metavar="NAME|UUID",
              help="also this cluster, whatever its labels (repeatable); neither this nor "
                   "--selector: every cluster")
@click.option("--step", "steps", multiple=True, metavar="N|P%|SELECTOR",
              help="the next step's clusters (repeatable; the rest form a last step)")
@click.option("--pause", metavar="manual|SECONDS",
              help="after each step is ready: until a resume, or that many seconds")
@click.option("--max-unavailable", metavar="N|P%",
              help="at most this many clusters of a step changed and not ready yet")
@output_option
@quiet_option
def create(name: str, flux_version: str | None, template_file: Path | None,
           selector: str | None, clusters: tuple[str, ...], steps: tuple[str, ...],
           pause: str | None, max_unavailable: str | None, fmt: str) -> None:
    """Give many clusters a fluxVersion or a Flux template, step by step."""
    if (flux_version is None) == (template_file is None):
        raise click.UsageError("give exactly one of --flux-version and --template")
    api = manager()
    change = ({"fluxVersion": flux_version} if flux_version is not None
              else {"fluxTemplate": _mapping(template_file, "--template")}
              if template_file is not None else {})
    body: Row = {"name": name, "change": change}
    if selector is not None:
        body["selector"] = _selector(selector, "--selector")
    if clusters:
        body["clusters"] = [api.resolve(ref) for ref in clusters]
    paced: Row = {}
    if steps:
        paced["steps"] = [_step(text, pause) for text in steps]
    if max_unavailable is not None:
        paced["maxUnavailable"] = _count(max_unavailable)
    body["rollout"] = paced
    emit(api.call_object("POST", PATH, json=body), fmt, HEAD,
         optional=("REQUESTED", "MESSAGE"))


@rollout.command("list")
@output_option
@quiet_option
def list_rollouts(fmt: str) -> None:
    """Every rollout of both kinds, with its state and step."""
    emit(_list(manager()), fmt, HEAD, optional=("REQUESTED", "MESSAGE"))


@rollout.command("status")
@click.argument("ref", metavar="ROLLOUT")
@output_option
def status(ref: str, fmt: str) -> None:
    """The rollout: its state and step, then each step, then the failed clusters."""
    api = manager()
    view = api.call_object("GET", f"{PATH}/{resolve(api, ref)}")
    if fmt != "table":
        emit(view, fmt)
        return
    emit(view, fmt, HEAD, optional=("REQUESTED", "MESSAGE"))
    steps = [{**s, "n": n + 1}
             for n, s in enumerate(s for s in as_list(view.get("steps")) if is_object(s))]
    if steps:
        emit(steps, fmt, STEPS)
    if view.get("failed"):
        emit(view["failed"], fmt, FAILED)


def _request(action: str, ref: str) -> Row:
    api = manager()
    return api.call_object("POST", f"{PATH}/{resolve(api, ref)}/{action}")


@rollout.command("pause")
@click.argument("ref", metavar="ROLLOUT")
def pause(ref: str) -> None:
    """Stop giving more clusters the new revision (those that have it keep it)."""
    done = _request("pause", ref)
    click.echo(f"rollout {done['rolloutId']}: pause requested", err=True)


@rollout.command("resume")
@click.argument("ref", metavar="ROLLOUT")
def resume(ref: str) -> None:
    """Go on after a pause (a manual one: with the next step) or look again after a halt."""
    done = _request("resume", ref)
    click.echo(f"rollout {done['rolloutId']}: resume requested", err=True)


@rollout.command("abort")
@click.argument("ref", metavar="ROLLOUT")
def abort(ref: str) -> None:
    """End the rollout, leaving every cluster as it is."""
    done = _request("abort", ref)
    click.echo(f"rollout {done['rolloutId']}: abort requested; {done.get('message')}",
               err=True)


@rollout.command("promote")
@click.argument("ref", metavar="ROLLOUT")
def promote(ref: str) -> None:
    """Make a complete template rollout's candidate the default Flux template (``POST
    /v1/rollout/:r/promote``: written as you, so it needs write access to the Flux template
    app; recorded in the audit log); the Cluster Manager then removes the rollout's pins."""
    done = _request("promote", ref)
    click.echo(f"rollout {done['uuid']}: its template is the default; the Cluster Manager removes "
               "the pins", err=True)
