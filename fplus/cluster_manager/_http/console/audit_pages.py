"""The console's audit page at ``/ui/audit``: the audit log's rows, newest first, with the
filters ``GET /v1/audit`` has (cluster, by name or uuid; principal, by name or uuid; since,
an ISO 8601 time; limit; and a link to the next page), under the same permission:
Edge.Perm.Audit on the cluster filtered by, or on every cluster (the null uuid) without one.
A filter that is not valid is shown next to its field, and no row is read."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from flask import g, render_template, request, url_for

from fplus.config_store import uuids
from fplus.serving.http.since import parse_since

from ..context import require, services
from .name_lookup import by_name, cluster_names
from .pages import bp
from .session import signed_in

FILTERS = ("cluster", "principal", "since", "limit")
LIMIT = 100


def _filters() -> dict[str, str]:
    return {key: request.args[key].strip() for key in FILTERS
            if request.args.get(key, "").strip()}


def _query(filters: dict[str, str], names: dict[str, str]) -> tuple[dict[str, Any],
                                                                  dict[str, str]]:
    """The log's query for ``filters``, and why any filter is refused (by field)."""
    query: dict[str, Any] = {"cluster": None, "principal": filters.get("principal"),
                             "limit": LIMIT}
    errors: dict[str, str] = {}
    if "cluster" in filters:
        query["cluster"] = by_name(filters["cluster"], names)
        if query["cluster"] is None:
            errors["cluster"] = f"no cluster is named {filters['cluster']!r}"
    try:
        query["since"] = parse_since(filters.get("since"), ValueError)
    except ValueError as exc:
        errors["since"] = str(exc)
    limit = filters.get("limit", str(LIMIT))
    if limit.isdigit() and 1 <= int(limit) <= 1000:
        query["limit"] = int(limit)
    else:
        errors["limit"] = "limit must be a whole number from 1 to 1000"
    after = request.args.get("after", "")
    query["before"] = int(after) if after.isdigit() else None
    return query, errors


@bp.get("/audit")
@signed_in
def audit() -> tuple[str, int]:
    filters = _filters()
    names = cluster_names()
    query, errors = _query(filters, names)
    require(uuids.EdgePerm.Audit, query["cluster"] or uuids.NULL, g.console.authorization)
    log = services().audit
    rows: list[dict[str, Any]] = []
    more = None
    if log is not None and not errors:
        rows, more = log.page(**query)
    page = url_for("console.audit")
    next_link = f"{page}?{urlencode({**filters, 'after': more})}" if more is not None else None
    first_link = f"{page}?{urlencode(filters)}" if request.args.get("after") else None
    return render_template("audit.html", rows=rows, filters=filters, errors=errors,
                           names=names, next_link=next_link, first_link=first_link,
                           enabled=log is not None), 400 if errors else 200
