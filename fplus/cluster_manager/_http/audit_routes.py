"""The audit log at the door: every change asked of the API recorded once, and ``GET
/v1/audit`` (:mod:`fplus.cluster_manager.audit`).

Every request carries a request id: the caller's ``X-Request-Id`` when it is a short token,
else a new one; either is answered in ``X-Request-Id``. After a route listed in
:data:`ACTIONS` answers (a refusal too), one row is written naming the principal, the action,
its target as the URL (or, for a create, the answer) names it, and the status. Nothing of a
request's body or query is recorded: names only, never values or tokens. A request that
changes nothing (``dryrun`` or ``dryRun``, ``HEAD``) is not recorded. Nor is a request
whose caller proved nothing (a 401, or any answer before a principal or the cluster's
bootstrap token was checked): rows for those would let anyone fill the table. A bootstrap
URL refused as used or expired is recorded once per URL and reason (per process): its
replays add none.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import uuid as uuidlib
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from flask import Blueprint, Response, g, jsonify, request
from werkzeug.exceptions import BadRequest

from fplus.config_store import uuids
from fplus.config_store.client import Caller
from fplus.jsontypes import Doc
from fplus.serving.http.since import parse_since

from ..audit import Entry
from ..model.apps_and_roles import CONFIG_APP
from .context import bootstrap_token_proved, noted_cluster_name, require, services
from .params import only_query

bp = Blueprint("audit", __name__)
log = logging.getLogger(__name__)
REQUEST_ID = "X-Request-Id"
_GOOD_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


@dataclass(frozen=True)
class Action:
    """What a route's request does: its action name, its target's kind and where the
    target's uuid is: a URL part, :data:`ANSWER` (a create: the JSON answer's ``uuid``, else
    the last uuid of its ``Location``), or None (not known)."""

    name: str
    kind: str
    target: str | None = "cluster"
    reason: Callable[[Response], str | None] | None = None
    """A short word saying why a refusal was refused, from a fixed vocabulary."""
    reads: bool = False
    """A ``GET`` changes something (a bootstrap script redeems its token)."""


ANSWER = "answer"
UUID_IN_PATH = re.compile(r"/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
                          r"(?:/status)?(?:[?#]|$)")


def _bootstrap_reason(response: Response) -> str | None:
    if response.status_code == 410:  # a 401 (``invalid`` in older rows) is not recorded
        message = str((response.get_json(silent=True) or {}).get("error", ""))
        return "expired" if "expired" in message else "used"
    return None


_CLUSTER = {
    "create": Action("cluster.create", "cluster", ANSWER),
    "patch": Action("cluster.patch", "cluster"),
    "delete": Action("cluster.delete", "cluster"),
    "redeploy": Action("cluster.redeploy", "cluster"),
    "approve": Action("sealing-key.approve", "cluster"),
    "issue": Action("bootstrap-url.issue", "cluster"),
    "seal": Action("secret.seal", "secret", None),
    "remove": Action("secret.remove", "secret", None),
    "deploy": Action("deployment.create", "deployment", ANSWER),
    "move": Action("deployment.patch", "deployment", "deployment"),
    "undeploy": Action("deployment.delete", "deployment", "deployment"),
    "fleet": Action("fleet-deployment.create", "fleet-deployment", ANSWER),
    "rollout": Action("rollout.{action}", "rollout", "rollout"),
}
ACTIONS: dict[str, Action] = {
    "cluster_api.create_cluster": _CLUSTER["create"],
    "cluster_api.patch_cluster": _CLUSTER["patch"],
    "cluster_api.delete_cluster": _CLUSTER["delete"],
    "cluster_api.redeploy": _CLUSTER["redeploy"],
    "clusters.approve_key": _CLUSTER["approve"],
    "clusters.bootstrap_url": _CLUSTER["issue"],
    "clusters.bootstrap": Action("bootstrap-url.redeem", "cluster", reason=_bootstrap_reason,
                                 reads=True),
    "secrets.put_secret": _CLUSTER["seal"],
    "secrets.delete_secret": _CLUSTER["remove"],
    "deployments.create": _CLUSTER["deploy"],
    "deployments.patch": _CLUSTER["move"],
    "deployments.delete": _CLUSTER["undeploy"],
    "charts.delete_chart": Action("chart.delete", "chart", "chart"),
    "charts.import_chart": Action("chart.import", "chart", None),
    "charts.import_flux": Action("flux-version.import", "flux-version", None),
    "fleet.create_fleet": _CLUSTER["fleet"],
    "fleet.patch_fleet": Action("fleet-deployment.patch", "fleet-deployment", "fleet"),
    "fleet.delete_fleet": Action("fleet-deployment.delete", "fleet-deployment", "fleet"),
    "fleet.create_rollout": Action("rollout.create", "rollout", ANSWER),
    "fleet.request_rollout": _CLUSTER["rollout"],
    "fleet.promote_rollout": Action("rollout.promote", "rollout", "rollout"),
    "fleet.start_now": Action("rollout.start-now", "rollout", "rollout"),
    "windows.put_window": Action("maintenance-window.put", "maintenance-window", ANSWER),
    "windows.delete_window": Action("maintenance-window.delete", "maintenance-window", ANSWER),
    # the console's forms make the same changes (a form posted without a session is sent
    # to sign in, and changes nothing: not recorded)
    "console.new_cluster": _CLUSTER["create"],
    "console.bootstrap": _CLUSTER["issue"],
    "console.approve_key": _CLUSTER["approve"],
    "console.redeploy": _CLUSTER["redeploy"],
    "console.delete": _CLUSTER["delete"],
    "console.edit_labels": _CLUSTER["patch"],
    "console.seal": _CLUSTER["seal"],
    "console.remove_secret": _CLUSTER["remove"],
    "console.deploy": Action("deployment.create", "deployment", None),
    "console.move": _CLUSTER["move"],
    "console.undeploy": _CLUSTER["undeploy"],
    "console.create_fleet": _CLUSTER["fleet"],
    "console.rollout_action": _CLUSTER["rollout"],
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
    if action is None or log_ is None or not _changes(action) or not _proved(action, response):
        return response
    try:
        log_.record(_entry(action, response))
    except Exception:  # the change is made: say so loudly, never fail its answer
        log.exception("audit: could not record %s (request %s)", action.name,
                      response.headers[REQUEST_ID])
        services().metrics.errors.labels("audit").inc()
    return response


def _changes(action: Action) -> bool:
    """Whether this request of an audited route may change something."""
    if {"dryrun", "dryRun"} & set(request.args) or request.method in ("HEAD", "OPTIONS"):
        return False
    if request.method == "GET" and not action.reads:
        return False
    return request.blueprint != "console" or "console" in g  # signed in


class FirstSeen:
    """The last ``size`` keys seen (the oldest forgotten first): :meth:`first` is True once
    per key."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._seen: OrderedDict[Hashable, None] = OrderedDict()
        self._lock = threading.Lock()

    def first(self, key: Hashable) -> bool:
        """Whether ``key`` is new (it is remembered from now on)."""
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return False
            self._seen[key] = None
            if len(self._seen) > self.size:
                self._seen.popitem(last=False)
            return True


_REPLAYS = FirstSeen()
"""Bootstrap URLs refused as used or expired, by token digest and answer."""


def _who() -> Caller | None:
    """The principal the request proved: the API's caller, or the console session's."""
    who: Caller | None = g.get("principal") or getattr(g.get("console"), "caller", None)
    return who


def _proved(action: Action, response: Response) -> bool:
    """Whether the request is worth a row: not a 401, and its caller proved (a principal, or
    the cluster's bootstrap token; a refused one only the first time per URL)."""
    if response.status_code == 401:
        return False
    if _who() is not None:
        return True
    if not bootstrap_token_proved():
        return False
    if response.status_code < 400:
        return True
    token = hashlib.sha256(request.args.get("token", "").encode()).hexdigest()
    reason = action.reason(response) if action.reason is not None else None
    return _REPLAYS.first((request.path, token, response.status_code, reason))


def _entry(action: Action, response: Response) -> Entry:
    args = request.view_args or {}
    cluster = args.get("cluster")
    answer = response.get_json(silent=True) if response.is_json else None
    answer = answer if isinstance(answer, dict) else {}
    target, name = _target(action, response, answer), answer.get("name")
    form = request.form if request.blueprint == "console" else {}
    if action.kind == "secret":  # key names only: the value is never read
        name = "/".join(str(args.get(part) or form.get(part) or "")
                        for part in ("namespace", "name", "key"))
    elif action.target in (ANSWER, None) and not isinstance(name, str):
        name = form.get("name") or None
    elif action.kind == "cluster" and isinstance(target, str) and target \
            and not isinstance(name, str):
        name = _cluster_name(target)
    if action.kind == "cluster":
        cluster = cluster or target
    who = _who()
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


def _target(action: Action, response: Response, answer: Doc) -> object:
    """The target's uuid (see :class:`Action`); None when not known or not made."""
    if action.target is None:
        return None
    if action.target != ANSWER:
        return (request.view_args or {}).get(action.target)
    if response.status_code >= 400:
        return None
    found = UUID_IN_PATH.search(response.headers.get("Location", ""))
    return answer.get("uuid") or (found[1] if found else None)


def _cluster_name(cluster: str) -> str | None:
    """The cluster's name as its route read it, else from its configuration entry, if it
    has one."""
    noted = noted_cluster_name(cluster)
    if noted is not None:
        return noted
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
    principal = request.args.get("principal")
    if principal is not None and not principal:
        raise BadRequest("principal must be a principal's uuid or name")
    since = parse_since(request.args.get("since"), BadRequest)
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


__all__ = ["ACTIONS", "Action", "bp"]
