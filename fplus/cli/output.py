"""Printing read results as a table (Rich), JSON or YAML (``-o``)."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

import click
import yaml
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from fplus.jsontypes import as_object

FORMATS = ("table", "wide", "json", "yaml")
WIDE = ("UUID",)
"""Columns a table shows only with ``-o wide`` (unless a command names others)."""
FREE_TEXT = ("ERROR", "MESSAGE", "LABELS", "TARGET", "OUTCOME")
"""Columns of prose, which a narrow terminal cuts first."""
Column = tuple[str, Callable[[dict[str, object]], object]]
"""A table column: its title and what it shows of a row (a JSON object, as
:data:`.api.Row`)."""
Command = TypeVar("Command", bound=Callable[..., object])


def _no_headers(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    ctx.meta["fplus.no_headers"] = value


def output_option(fn: Command) -> Command:
    """``-o/--output table|wide|json|yaml`` and ``--no-headers`` on a read command."""
    fn = click.option("--no-headers", is_flag=True, expose_value=False, callback=_no_headers,
                      help="print tables without their header line")(fn)
    return click.option("-o", "--output", "fmt", type=click.Choice(FORMATS), default="table",
                        show_default=True,
                        help="how to print the result (wide: with UUIDs and more)")(fn)


def _headers() -> bool:
    ctx = click.get_current_context(silent=True)
    return not (ctx is not None and ctx.find_root().meta.get("fplus.no_headers"))


def quiet_option(fn: Callable[..., object]) -> Callable[..., object]:
    """``-q/--quiet`` on a command that also has ``-o``: only the UUIDs, one per line."""
    @functools.wraps(fn)
    def wrapper(*args: object, quiet: bool, **kwargs: object) -> object:
        if quiet:
            kwargs["fmt"] = "uuid"
        return fn(*args, **kwargs)
    return click.option("-q", "--quiet", is_flag=True,
                        help="print only UUIDs, one per line (for scripts)")(wrapper)


def by_name(rows: Iterable[dict[str, object]]) -> list[dict[str, object]]:
    """``rows`` sorted by name (then UUID), the order every list prints in."""
    return sorted(rows, key=lambda r: (str(r.get("name") or ""), str(r.get("uuid") or "")))


def ago(when: object, now: datetime | None = None) -> str | None:
    """An RFC 3339 time as its age, kubectl-style (``45s ago``, ``3m ago``, ``2h ago``,
    ``5d ago``); None for none; text that is no time, as it is."""
    if not isinstance(when, str) or not when:
        return None
    try:
        moment = datetime.fromisoformat(when.replace("Z", "+00:00"))
    except ValueError:
        return when
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = int(((now or datetime.now(UTC)) - moment).total_seconds())
    if seconds < 0:
        return "just now" if seconds > -60 else when
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def _cell(value: object) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    return str(value)


def emit(data: object, fmt: str, columns: Sequence[Column] = (),
         optional: Sequence[str] = ("ERROR", "LABELS"), wide: Sequence[str] = WIDE) -> None:
    """Print ``data``: as JSON or YAML whole, or as a table of ``columns`` over ``data`` (a
    list, or one row for a dict); ``optional`` columns show only when some row has a value,
    ``wide`` ones only with ``-o wide``."""
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, sort_keys=True))
        return
    if fmt == "yaml":
        click.echo(yaml.safe_dump(data, sort_keys=True).rstrip())
        return
    if fmt == "uuid":
        for item in data if isinstance(data, list) else [data]:
            click.echo(as_object(item)["uuid"])
        return
    console(fmt).print(table(data, columns, optional, wide, fmt))


def console(fmt: str) -> Console:
    """Where a table goes: as wide as the terminal (or ``COLUMNS``) says, one line a row,
    cut short with an ellipsis where it must; ``-o wide``, like kubectl's, never cut."""
    detected = sys.stdout.isatty() or bool(os.environ.get("COLUMNS"))
    width = 100_000 if fmt == "wide" else None if detected else 200
    return Console(file=sys.stdout, soft_wrap=fmt == "wide", width=width)


def table(data: object, columns: Sequence[Column],
          optional: Sequence[str] = ("ERROR", "LABELS"), wide: Sequence[str] = WIDE,
          fmt: str = "table") -> Table:
    """A Rich table of ``columns`` over ``data`` (a list, or one row for a dict), without
    the ``wide`` columns unless ``fmt`` is ``wide``."""
    items = [as_object(item) for item in (data if isinstance(data, list) else [data])]
    shown = [(title, get) for title, get in columns
             if (fmt == "wide" or title not in wide)
             and (title not in optional or any(_cell(get(item)) != "-" for item in items))]
    result = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                   show_header=_headers())
    for title, _ in shown:  # free text gives way first; every cell stays on one line
        result.add_column(title, no_wrap=title not in FREE_TEXT, overflow="ellipsis")
    for item in items:
        result.add_row(*(Text(_cell(get(item)), no_wrap=True, overflow="ellipsis")
                         for _, get in shown))
    return result
