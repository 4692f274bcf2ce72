"""The audit log at the door: every change asked of the API recorded once, and ``GET
/v1/audit`` (:mod:`fplus.cluster_manager.audit`).

Every request carries a request id: the caller's ``X-Request-Id`` when it is a short token,
else a new one; either is answered in ``X-Request-Id``. After a route listed in
:data:`ACTIONS` answers (a refusal too), one row is written naming the principal, the action,
its target as the URL (or, for a create, the answer) names it, and the status. Nothing of a
request's body or query is recorded: names only, never values or tokens. A request that
changes nothing (``dryrun``, ``HEAD``) is not recorded.
"""

from __future__ import annotations

import logging
import re
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from flask import Blueprint, Response, g, jsonify, request
from werkzeug.exceptions import BadRequest

from fplus.config_store import uuids

from ..audit import Entry
from ..model.apps_and_roles import CONFIG_APP
from .context import require, services
from .params import only_query

bp = Blueprint("audit", __name__)
log = logging.getLogger(__name__)
REQUEST_ID = "X-Request-Id"
_GOOD_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


@dataclass(frozen=True)
class Action:
    """What a route's request does: its action name, its target's kind and where the
    target's uuid is (a URL part, or ``None``: the answer's ``uuid``, for a create)."""

    name: str
    kind: str
    target: str | None = "cluster"
    reason: Callable[[Response], str | None] | None = None
    """A short word saying why a refusal was refused, from a fixed vocabulary."""


def _bootstrap_reason(response: Response) -> str | None:
    if response.status_code == 401:
        return "invalid"
    if response.status_code == 410:
        message = str((response.get_json(silent=True) or {}).get("error", ""))
        return "expired" if "expired" in message else "used"
    return None


ACTIONS: dict[str, Action] = {
    "cluster_api.create_cluster": Action("cluster.create", "cluster", None),
    "cluster_api.patch_cluster": Action("cluster.patch", "cluster"),
    "cluster_api.delete_cluster": Action("cluster.delete", "cluster"),
    "cluster_api.redeploy": Action("cluster.redeploy", "cluster"),
    "clusters.approve_key": Action("sealing-key.approve", "cluster"),
    "clusters.bootstrap_url": Action("bootstrap-url.issue", "cluster"),
    "clusters.bootstrap": Action("bootstrap-url.redeem", "cluster", reason=_bootstrap_reason),
    "secrets.put_secret": Action("secret.seal", "secret", None),
    "secrets.delete_secret": Action("secret.remove", "secret", None),
    "deployments.create": Action("deployment.create", "deployment", None),
    "deployments.patch": Action("deployment.patch", "deployment", "deployment"),
    "deployments.delete": Action("deployment.delete", "deployment", "deployment"),
    "charts.delete_chart": Action("chart.delete", "chart", "chart"),
    "fleet.create_fleet": Action("fleet-deployment.create", "fleet-deployment", None),
    "fleet.patch_fleet": Action("fleet-deployment.patch", "fleet-deployment", "fleet"),
    "fleet.delete_fleet": Action("fleet-deployment.delete", "fleet-deployment", "fleet"),
    "fleet.create_rollout": Action("rollout.create", "rollout", None),
    "fleet.request_rollout": Action("rollout.{action}", "rollout", "rollout"),
}
"""The audited routes by endpoint (a new changing route is added here)."""


@bp.before_app_request
def _request_id() -> None:
    given = request.headers.get(REQUEST_ID, "")
    g.request_id = given if _GOOD_ID.fullmatch(given) else uuidlib.uuid4().hex


@bp.after_app_request
def _record(response: Response) -> Response:
    response.headers[REQUEST_ID] = g.get("request_id") or uuidlib.uuid4().hex
    action = ACTIONS.get(request.endpoint or "")
    log_ = services().audit
    if action is None or log_ is None or request.method in ("HEAD", "OPTIONS") \
            or "dryrun" in request.args:
        return response
    try:
        log_.record(_entry(action, response))
    except Exception:  # the change is made: say so loudly, never fail its answer
        log.exception("audit: could not record %s (request %s)", action.name,
                      response.headers[REQUEST_ID])
        services().metrics.errors.labels("audit").inc()
    return response


def _entry(action: Action, response: Response) -> Entry:
    args = request.view_args or {}
    cluster = args.get("cluster")
    answer = response.get_json(silent=True) if response.is_json else None
    answer = answer if isinstance(answer, dict) else {}
    if action.target is None:  # a create: what the answer names, if it was made
        target, name = answer.get("uuid"), answer.get("name")
    else:
        target, name = args.get(action.target), answer.get("name")
    if action.kind == "secret":
        name = f"{args.get('namespace')}/{args.get('name')}/{args.get('key')}"
    elif action.kind == "cluster" and target and not isinstance(name, str):
        name = _cluster_name(target)
    if action.kind == "cluster":
        cluster = cluster or target
    who = g.get("principal")
    verb = action.name.format(action=args.get("action", ""))
    reason = action.reason(response) if action.reason is not None else None
    return Entry(
        request_id=response.headers[REQUEST_ID],
        principal=getattr(who, "uuid", None), principal_name=getattr(who, "name", None),
        action=verb, target_kind=action.kind,
        target=target if isinstance(target, str) else None,
        target_name=name if isinstance(name, str) else None,
        cluster=cluster if isinstance(cluster, str) else None,
        status=response.status_code, reason=reason)


def _cluster_name(cluster: str) -> str | None:
    """The cluster's name from its configuration entry, if it has one."""
    try:
        config = services().cs.get_config(CONFIG_APP, cluster)
    except Exception:  # a name is a courtesy: the row is written without one
        return None
    name = config.get("name") if isinstance(config, dict) else None
    return name if isinstance(name, str) else None


@bp.get("/v1/audit")
def audit() -> Response:
    only_query("cluster", "principal", "since", "limit", "after")
    cluster = request.args.get("cluster")
    if cluster is not None and not uuids.is_uuid(cluster):
        raise BadRequest("cluster must be a cluster UUID")
    require(uuids.EdgePerm.Audit, cluster or uuids.NULL)
    principal = request.args.get("principal") or None
    since = _since(request.args.get("since"))
    limit = request.args.get("limit", "100")
    if not limit.isdigit() or not 1 <= int(limit) <= 1000:
        raise BadRequest("limit must be a whole number from 1 to 1000")
    after = request.args.get("after")
    if after is not None and not after.isdigit():
        raise BadRequest("after must be the `next` of the previous page (a whole number)")
    log_ = services().audit
    if log_ is None:
        return jsonify({"entries": [], "next": None})
    entries, more = log_.page(cluster=cluster, principal=principal, since=since,
                              before=None if after is None else int(after),
                              limit=int(limit))
    return jsonify({"entries": entries, "next": None if more is None else str(more)})


def _since(value: str | None) -> float | None:
    """``since`` as seconds since the epoch (an ISO 8601 time; naive means UTC)."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest("since must be an ISO 8601 time, e.g. 2026-01-31T12:00:00Z") from None
    return (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp()


__all__ = ["ACTIONS", "Action", "bp"]
