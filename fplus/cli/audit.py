"""``fplus audit``: who changed what through the Cluster Manager's API, newest first
(``GET /v1/audit``, paged)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import click

from .output import Column, emit, output_option
from .session import manager

DURATION = re.compile(r"(\d+)([smhdw])")
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
PAGE = 1000


def _target(row: dict[str, Any]) -> str:
    target = row.get("target") or {}
    return f"{target.get('kind')} {target.get('name') or target.get('uuid') or '-'}"


def _outcome(row: dict[str, Any]) -> str:
    """``ok``, or ``refused STATUS``; with the reason when there is one (for
    ``phase.changed``: the phase reached)."""
    reason = f" ({row['reason']})" if row.get("reason") else ""
    if row.get("outcome") == "ok":
        return "ok" + reason
    return f"refused {row.get('status')}{reason}"


COLUMNS: list[Column] = [
    ("TIME", lambda r: r.get("time")),
    ("PRINCIPAL", lambda r: (r.get("principal") or {}).get("name")
     or (r.get("principal") or {}).get("uuid")),
    ("ACTION", lambda r: r.get("action")), ("TARGET", _target),
    ("OUTCOME", _outcome), ("REQUEST", lambda r: r.get("requestId"))]


def since_time(text: str, now: datetime | None = None) -> str:
    """``--since`` as an ISO 8601 UTC time: an ISO time as it is (naive: UTC), or a
    duration back from now (``90s``, ``30m``, ``12h``, ``7d``, ``2w``)."""
    found = DURATION.fullmatch(text.strip())
    if found:
        back = timedelta(**{UNITS[found[2]]: int(found[1])})
        when = (now or datetime.now(UTC)) - back
    else:
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise click.BadParameter(f"{text!r} is neither an ISO 8601 time "
                                     "(2026-01-31T12:00:00Z) nor a duration (30m, 12h, 7d)",
                                     param_hint="--since") from None
        when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@click.command("audit")
@click.option("--cluster", metavar="NAME|UUID", help="only the changes to this cluster")
@click.option("--principal", metavar="NAME|UUID", help="only the changes this principal asked")
@click.option("--since", metavar="ISO|DURATION",
              help="only changes since then (2026-01-31T12:00:00Z, or 30m, 12h, 7d ago)")
@click.option("--limit", type=click.IntRange(1, 100_000), default=100, show_default=True,
              help="at most this many rows (the newest)")
@output_option
def audit(cluster: str | None, principal: str | None, since: str | None, limit: int,
          fmt: str) -> None:
    """Who changed what, newest first: clusters, deployments, secrets (names only),
    bootstrap URLs issued and redeemed, refusals with their status."""
    params: dict[str, str] = {}
    if since is not None:
        params["since"] = since_time(since)
    api = manager()
    if cluster is not None:
        params["cluster"] = api.resolve(cluster)
    if principal is not None:
        params["principal"] = principal
    rows: list[dict[str, Any]] = []
    after = None
    while len(rows) < limit:
        page = api.call("GET", "/v1/audit", params={
            **params, "limit": str(min(PAGE, limit - len(rows))),
            **({"after": after} if after else {})}).json()
        rows += page["entries"]
        after = page.get("next")
        if not after:
            break
    emit(rows, fmt, COLUMNS)
