"""``fplus window …``: maintenance windows, when a rollout may change the clusters a label
selector matches: list, get, set (create or replace) and delete."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import click

from fplus.jsontypes import as_list, as_object

from . import refs
from .api import ManagerApi, Row
from .fleet import read_mapping, selector
from .labels import SELECTOR_HELP
from .output import Column, by_name, emit, output_option, quiet_option
from .session import manager

PATH = "/v1/maintenance-window"


def selector_text(found: object) -> str:
    """A selector ``{matchLabels?, matchExpressions?}`` in kubectl's string form (``{}``:
    every cluster, shown as ``*``)."""
    sel = as_object(found)
    parts = [f"{k}={v}" for k, v in as_object(sel.get("matchLabels")).items()]
    for item in as_list(sel.get("matchExpressions")):
        expr = as_object(item)
        key, op = expr.get("key"), expr.get("operator")
        values = ",".join(str(v) for v in as_list(expr.get("values")))
        parts.append({"Exists": f"{key}", "DoesNotExist": f"!{key}",
                      "In": f"{key} in ({values})"}.get(str(op), f"{key} notin ({values})"))
    return ",".join(parts) or "*"


def duration_text(seconds: object) -> object:
    """Whole seconds as ``4h``, ``1h30m``, ``2d``."""
    if not isinstance(seconds, int):
        return seconds
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{n}{unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "m"),
                                                  (secs, "s")) if n) or "0s"


def _next(window: Row) -> object:
    if window.get("open"):
        return "open now"
    upcoming = window.get("nextOpen")
    return str(upcoming).replace("T", " ").replace(":00Z", "Z") if upcoming else "never"


COLUMNS: list[Column] = [
    ("NAME", lambda w: w.get("name")), ("SELECTOR", lambda w: selector_text(w.get("selector"))),
    ("SCHEDULE", lambda w: w.get("schedule")), ("ZONE", lambda w: w.get("timeZone")),
    ("DURATION", lambda w: duration_text(w.get("duration"))), ("NEXT", _next),
    ("UUID", lambda w: w.get("uuid"))]


def _windows(api: ManagerApi) -> list[Row]:
    return [as_object(w) for w in as_list(api.call_object("GET", PATH).get(
        "maintenanceWindows"))]


def _name(api: ManagerApi, ref: str) -> str:
    """The name of the window named ``ref``, or whose UUID it is."""
    if refs.is_uuid(ref):
        for window in _windows(api):
            if window.get("uuid") == ref.lower():
                return str(window["name"])
    return ref


def _url(name: str) -> str:
    return f"{PATH}/{quote(name, safe='')}"


@click.group("window")
def window() -> None:
    """Maintenance windows: when a rollout may change the clusters a selector matches."""


@window.command("list")
@output_option
@quiet_option
def list_windows(fmt: str) -> None:
    """Every window: its selector, schedule, zone, duration, and open now or next opening."""
    emit(by_name(_windows(manager())), fmt, COLUMNS)


@window.command("get")
@click.argument("ref", metavar="NAME|UUID")
@output_option
@quiet_option
def get(ref: str, fmt: str) -> None:
    """One window, with whether it is open now or when it next opens."""
    api = manager()
    emit(api.call_object("GET", _url(_name(api, ref))), fmt, COLUMNS)


@window.command("set")
@click.argument("name")
@click.option("-l", "--selector", "selectors", multiple=True, metavar="SELECTOR",
              help=f"the clusters whose labels match: {SELECTOR_HELP} (repeatable: all must "
                   "match; '' matches every cluster)")
@click.option("--schedule", metavar="CRON",
              help="when it opens: a five-field cron expression, e.g. '0 22 * * 1-5'")
@click.option("--duration", metavar="DURATION",
              help="how long it stays open: seconds, or '4h', '90m', '1h30m', '2d' (1m to 7d)")
@click.option("--time-zone", "time_zone", metavar="ZONE",
              help="the IANA time zone the schedule is read in, e.g. Europe/London "
                   "(default UTC)")
@click.option("-f", "--file", "body_file", type=click.Path(path_type=Path, dir_okay=False),
              help="YAML or JSON file of the whole window {selector, schedule, duration, "
                   "timeZone}; the options above override its fields")
@output_option
@quiet_option
def set_window(name: str, selectors: tuple[str, ...], schedule: str | None,
               duration: str | None, time_zone: str | None, body_file: Path | None,
               fmt: str) -> None:
    """Create or replace the window NAME (a DNS-1123 label)."""
    body: Row = {k: v for k, v in (read_mapping(body_file, "--file") if body_file else {}
                                   ).items() if k not in ("uuid", "open", "nextOpen")}
    if selectors:
        body["selector"] = selector(selectors, "--selector")
    given = {"schedule": schedule, "timeZone": time_zone,
             "duration": int(duration) if duration and duration.isdigit() else duration}
    body |= {k: v for k, v in given.items() if v is not None}
    missing = [f"--{o}" for o, k in (("selector", "selector"), ("schedule", "schedule"),
                                      ("duration", "duration")) if k not in body]
    if missing:
        raise click.UsageError(f"give {', '.join(missing)} (or a --file holding them)")
    emit(manager().call_object("PUT", _url(name), json=body), fmt, COLUMNS)


@window.command("delete")
@click.argument("ref", metavar="NAME|UUID")
def delete(ref: str) -> None:
    """Delete a window: the clusters it matched wait for it no more."""
    api = manager()
    name = _name(api, ref)
    api.call("DELETE", _url(name))
    click.echo(f"maintenance window {name} deleted", err=True)
