"""``fplus audit``: who changed what through the Cluster Manager's API, newest first
(``GET /v1/audit``, paged); with ``--store``, through the Config Store's Auth API (``GET
/v2/audit``: principals, passwords, grants, identities)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import click
import requests

from fplus.jsontypes import as_object, is_object, text

from . import refs
from .api import ApiError, Row, rows
from .output import Column, emit, output_option
from .session import CONFIG_STORE, STORE_URL, current, manager
from .transport import unreachable

DURATION = re.compile(r"(\d+)([smhdw])")
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
PAGE = 1000


def _target(row: Row) -> str:
    target = as_object(row.get("target"))
    return f"{target.get('kind')} {target.get('name') or target.get('uuid') or '-'}"


def _outcome(row: Row) -> str:
    """``ok``, or ``refused STATUS``; with the reason when there is one (for
    ``phase.changed``: the phase reached)."""
    reason = f" ({row['reason']})" if row.get("reason") else ""
    if row.get("outcome") == "ok":
        return "ok" + reason
    return f"refused {row.get('status')}{reason}"


COLUMNS: list[Column] = [
    ("TIME", lambda r: r.get("time")),
    ("PRINCIPAL", lambda r: as_object(r.get("principal")).get("name")
     or as_object(r.get("principal")).get("uuid")),
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


Pager = Callable[[dict[str, str]], Row]


def _store_pages() -> Pager:
    """``GET /v2/audit`` on the profile's Config Store, with its credentials."""
    found = current()
    header = found.authorization()
    if header is None:
        raise ApiError(401, "not logged in: run `fplus login URL` (or set FPLUS_TOKEN, or "
                            "FPLUS_USER and FPLUS_PASSWORD)")
    base = found.config_store_url

    def page(params: dict[str, str]) -> Row:
        try:
            resp = requests.get(f"{base}/v2/audit", params=params, timeout=30,
                                headers={"Authorization": header},
                                verify=found.ca_file or True)
        except requests.RequestException as exc:
            raise ApiError(0, unreachable(CONFIG_STORE, base, exc, STORE_URL)) from None
        if resp.status_code >= 400:
            try:
                detail = as_object(resp.json()).get("error")
            except ValueError:
                detail = None
            raise ApiError(resp.status_code, f"{base}: {detail or resp.reason}")
        body: object = resp.json()
        if not is_object(body):
            raise ApiError(resp.status_code, f"{base}/v2/audit answered no JSON object")
        return body

    return page


@click.command("audit")
@click.option("--cluster", metavar="NAME|UUID", help="only the changes to this cluster")
@click.option("--principal", metavar="NAME|UUID", help="only the changes this principal asked")
@click.option("--since", metavar="ISO|DURATION",
              help="only changes since then (2026-01-31T12:00:00Z, or 30m, 12h, 7d ago)")
@click.option("--limit", type=click.IntRange(1, 100_000), default=100, show_default=True,
              help="at most this many rows (the newest)")
@click.option("--store", is_flag=True,
              help="the Config Store's log instead: principals, passwords, grants, identities")
@click.option("--target", metavar="NAME|UUID",
              help="with --store: only the changes to this principal (and its grants) or grant")
@output_option
def audit(cluster: str | None, principal: str | None, since: str | None, limit: int,
          store: bool, target: str | None, fmt: str) -> None:
    """Who changed what, newest first: clusters, deployments, secrets (names only),
    bootstrap URLs issued and redeemed, refusals with their status. With --store, the
    Config Store's log: principals created, re-passworded and deleted, grants added and
    removed, identities set (never a password)."""
    if store and cluster is not None:
        raise click.UsageError("--cluster is the Cluster Manager's filter; with --store use "
                               "--target")
    if target is not None and not store:
        raise click.UsageError("--target filters the Config Store's log: add --store")
    params: dict[str, str] = {}
    if since is not None:
        params["since"] = since_time(since)
    if principal is not None:
        params["principal"] = principal
    if store:
        pager = _store_pages()
        if target is not None:
            params["target"] = target
    else:
        api = manager()
        if cluster is not None:
            params["cluster"] = refs.cluster(api, cluster)

        def pager(query: dict[str, str]) -> Row:
            return api.call_object("GET", "/v1/audit", params=query)

    entries: list[Row] = []
    after = None
    while len(entries) < limit:
        page = pager({**params, "limit": str(min(PAGE, limit - len(entries))),
                      **({"after": after} if after else {})})
        entries += rows(page, "entries")
        after = text(page, "next")
        if not after:
            break
    emit(entries, fmt, COLUMNS, wide=("REQUEST",))
