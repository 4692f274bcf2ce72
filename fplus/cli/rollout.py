"""``fplus rollout status|pause|resume|abort``: a fleet deployment's paced rollout (named by
the fleet deployment, by name or uuid)."""

from __future__ import annotations

from typing import Any

import click

from .fleet import resolve
from .output import Column, emit, output_option
from .session import manager

PATH = "/v1/rollout"
HEAD: list[Column] = [
    ("NAME", lambda r: r.get("name")), ("UUID", lambda r: r.get("uuid")),
    ("STATE", lambda r: r.get("state")),
    ("STEP", lambda r: f"{r.get('step', 0) + 1}/{len(r.get('steps') or []) or '-'}"),
    ("UPDATED", lambda r: len(r.get("updated") or [])),
    ("REQUESTED", lambda r: r.get("pendingRequest")), ("MESSAGE", lambda r: r.get("message"))]
STEPS: list[Column] = [
    ("STEP", lambda s: s["n"]), ("STATE", lambda s: s.get("state")),
    ("CLUSTERS", lambda s: len(s.get("clusters") or [])),
    ("STARTED", lambda s: len(s.get("started") or []))]
FAILED: list[Column] = [("FAILED", lambda f: f.get("cluster")),
                        ("MESSAGE", lambda f: f.get("message"))]


@click.group("rollout")
def rollout() -> None:
    """A fleet deployment's paced rollout: its progress; pause, resume or abort it."""


@rollout.command("status")
@click.argument("ref", metavar="FLEET")
@output_option
def status(ref: str, fmt: str) -> None:
    """The rollout: its state and step, then each step, then the failed clusters."""
    api = manager()
    view = api.call("GET", f"{PATH}/{resolve(api, ref)}").json()
    if fmt != "table":
        emit(view, fmt)
        return
    emit(view, fmt, HEAD, optional=("REQUESTED", "MESSAGE"))
    steps = [s | {"n": n + 1} for n, s in enumerate(view.get("steps") or [])]
    if steps:
        emit(steps, fmt, STEPS)
    if view.get("failed"):
        emit(view["failed"], fmt, FAILED)


def _request(action: str, ref: str) -> dict[str, Any]:
    api = manager()
    answer: dict[str, Any] = api.call("POST", f"{PATH}/{resolve(api, ref)}/{action}").json()
    return answer


@rollout.command("pause")
@click.argument("ref", metavar="FLEET")
def pause(ref: str) -> None:
    """Stop giving more clusters the new revision (those that have it keep it)."""
    done = _request("pause", ref)
    click.echo(f"rollout {done['rolloutId']}: pause requested", err=True)


@rollout.command("resume")
@click.argument("ref", metavar="FLEET")
def resume(ref: str) -> None:
    """Go on after a pause (a manual one: with the next step) or look again after a halt."""
    done = _request("resume", ref)
    click.echo(f"rollout {done['rolloutId']}: resume requested", err=True)


@rollout.command("abort")
@click.argument("ref", metavar="FLEET")
def abort(ref: str) -> None:
    """End the rollout, leaving every cluster as it is."""
    done = _request("abort", ref)
    click.echo(f"rollout {done['rolloutId']}: abort requested; {done.get('message')}",
               err=True)
