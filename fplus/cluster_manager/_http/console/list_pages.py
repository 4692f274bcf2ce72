"""The console's cluster list at ``/ui/``: one page of the fleet at a time, in name order,
searched (part of a name, or the start of a uuid) and filtered by phase, by sync state and by
a label selector (Kubernetes' text form, as ``GET /v1/cluster?selector=`` takes it), with the
count of each phase, each cluster's labels and sync, when its edge was last seen ("3 min
ago", the time itself as the cell's title) and, for a Failed cluster, why.

It asks the API wing for exactly what ``GET /v1/cluster`` answers (the same permission check
per cluster), so a fleet of 10,000 clusters is never rendered, nor read, whole: the page holds
``limit`` rows and a link to the next page. ``/ui/rows`` renders the same page's rows again,
for the page to refresh them without a reload."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlencode

from flask import g, render_template, request, url_for
from werkzeug.exceptions import BadRequest

from fplus.config_store import uuids

from ...services.clusters.status_view import parse_time
from ...services.fleet.cluster_list import PHASES, SYNC_STATES, FleetPage
from ..cluster_api_routes import fleet_page
from ..context import can_view, services
from .pages import DONE, bp
from .session import signed_in

PAGE_SIZE = 100
"""Rows per page, unless the address asks for another ``limit`` (1-200)."""
_FILTERS = ("q", "phase", "sync", "selector", "limit")


def _filters() -> dict[str, str]:
    """The list's filters as the address gives them (empty ones dropped)."""
    return {key: request.args[key].strip() for key in _FILTERS
            if request.args.get(key, "").strip()}


def _page(filters: dict[str, str]) -> FleetPage:
    who = g.console.caller
    args = {"sort": "name", "limit": str(PAGE_SIZE)}
    limit = filters.get("limit", "")
    if limit.isdigit() and 1 <= int(limit) <= 200:
        args["limit"] = limit
    for ours, theirs in (("q", "search"), ("phase", "phase"), ("sync", "sync"),
                         ("selector", "selector")):
        if ours in filters:
            args[theirs] = filters[ours]
    if request.args.get("after"):
        args["after"] = request.args["after"]
    return fleet_page(lambda cluster: can_view(who, cluster), args)


def _link(filters: dict[str, str], **change: str | None) -> str:
    """The list's address with ``filters`` changed by ``change`` (None drops one)."""
    merged = {**filters, **change}
    query = urlencode({k: v for k, v in merged.items() if v})
    return url_for("console.clusters") + (f"?{query}" if query else "")


def _rows_link(filters: dict[str, str], after: str | None) -> str:
    """Where the page refreshes its rows: the same page."""
    query = urlencode({**filters, **({"after": after} if after else {})})
    return url_for("console.cluster_rows") + (f"?{query}" if query else "")


@bp.get("/")
@signed_in
def clusters() -> tuple[str, int]:
    filters = _filters()
    try:
        page = _page(filters)
    except BadRequest as exc:  # a selector that is not Kubernetes' selector syntax
        empty = FleetPage([], None, dict.fromkeys(PHASES, 0), 0)
        return _list(filters, empty, selector_error=exc.description), 400
    return _list(filters, page), 200


def _list(filters: dict[str, str], page: FleetPage, **extra: object) -> str:
    after = request.args.get("after")
    return render_template(
        "clusters.html", clusters=page.clusters, counts=page.counts, total=page.total,
        filters=filters, phases=PHASES, sync_states=SYNC_STATES,
        link=lambda **change: _link(filters, **change),
        next_link=_link(filters, after=page.next) if page.next else None,
        first_link=_link(filters) if after else None,
        rows_link=_rows_link(filters, after),
        can_create=services().access.allowed(g.console.caller, uuids.EdgePerm.Clusters,
                                             uuids.NULL),
        done=DONE.get(request.args.get("done", "")), **extra)


@bp.get("/rows")
@signed_in
def cluster_rows() -> str:
    """The page's rows alone, for the page to refresh its badges and times."""
    try:
        return render_template("_rows.html", clusters=_page(_filters()).clusters)
    except BadRequest:
        return render_template("_rows.html", clusters=[])


@bp.app_template_filter("ago")
def ago(when: object) -> str:
    """An RFC 3339 time as "3 min ago" (an unreadable one as it is)."""
    moment = parse_time(when)
    if moment is None:
        return str(when)
    seconds = int((datetime.now(UTC) - moment).total_seconds())
    if seconds < 10:
        return "just now" if seconds > -60 else "in the future"
    if seconds < 60:
        return f"{seconds} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    if seconds < 86400:
        return f"{seconds // 3600} h ago"
    days = seconds // 86400
    return f"{days} day{'s' if days > 1 else ''} ago"


@bp.app_template_filter("utc")
def utc(when: object) -> str:
    """An RFC 3339 time written out in UTC (the title of an "ago" cell)."""
    moment = parse_time(when)
    if moment is None:
        return str(when)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
