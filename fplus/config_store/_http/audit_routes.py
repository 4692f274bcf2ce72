"""The Auth audit log at the door (:mod:`fplus.config_store._domain.auth.audit`): the request
id and who acts, a row for each refused change, and ``GET /v2/audit``.

Every request carries a request id: the caller's ``X-Request-Id`` when it is a short token,
else a new one; either is answered in ``X-Request-Id``. The changes themselves are recorded
by the domain, in their own transactions; a change refused with 403 by a route listed in
:data:`REFUSABLE` is recorded here, after the answer is made. A 401 is not recorded (no
principal was proved: rows for those would let anyone fill the table).
"""

from __future__ import annotations

import logging
import re
import uuid as uuidlib
from collections.abc import Mapping
from typing import Any

from flask import Blueprint, Response, g, jsonify, request

from fplus.serving.http.since import parse_since

from .. import uuids
from .._domain.auth import audit
from .._domain.common.errors import BadRequest
from .auth import require, store

bp = Blueprint("audit", __name__)
log = logging.getLogger(__name__)
REQUEST_ID = "X-Request-Id"
_GOOD_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
QUERY = ("principal", "target", "since", "limit", "after")

REFUSABLE: dict[str, tuple[str, str, str | None]] = {
    "auth.create_principal": ("principal.create", "principal", None),
    "auth.set_password": ("principal.password", "principal", "principal"),
    "auth.generate_password": ("principal.password", "principal", "principal"),
    "auth.delete_principal": ("principal.delete", "principal", "principal"),
    "grants.add_grant": ("grant.add", "grant", None),
    "grants.put_grant": ("grant.replace", "grant", "grant"),
    "grants.delete_grant": ("grant.remove", "grant", "grant"),
    "identities.put_identity": ("identity.set", "principal", "principal"),
    "identities.delete_identity": ("identity.remove", "principal", "principal"),
}
"""The changing Auth routes by endpoint: ``(action, target kind, the URL part naming the
target)`` for the row of a 403."""


@bp.before_app_request
def _actor() -> None:
    """The request id, and who acts (``auth.authenticate`` ran before: this is registered
    after it)."""
    given = request.headers.get(REQUEST_ID, "")
    g.request_id = given if _GOOD_ID.fullmatch(given) else uuidlib.uuid4().hex
    audit.set_actor(audit.Actor(g.get("principal"), g.request_id))


@bp.after_app_request
def _refusal(response: Response) -> Response:
    request_id = g.get("request_id") or uuidlib.uuid4().hex
    response.headers[REQUEST_ID] = request_id
    record_refusal(request.endpoint, request.view_args, response.status_code)
    return response


def record_refusal(endpoint: str | None, view_args: Mapping[str, Any] | None,
                   status: int) -> None:
    """The row of a change refused with 403 by a route of :data:`REFUSABLE` (a batch
    records its refused operation this way once it has rolled back)."""
    found = REFUSABLE.get(endpoint or "")
    if found is None or status != 403 or g.get("principal") is None:
        return
    action, kind, part = found
    target = (view_args or {}).get(part) if part else None
    try:
        audit.refused(store().core, action, kind, target, status)
    except Exception:  # the answer stands: say so loudly, never fail it
        log.exception("audit: could not record a refused %s (request %s)", action,
                      g.get("request_id"))


@bp.teardown_app_request
def _done(_: BaseException | None) -> None:
    audit.set_actor(None)


@bp.get("/v2/audit")
def read() -> Response:
    """The audit rows newest first, paged: root, or ReadAudit on the wildcard."""
    require(uuids.AuthPerm.ReadAudit, uuids.NULL)
    unknown = sorted(set(request.args) - set(QUERY))
    if unknown:
        raise BadRequest(f"unknown query parameter {unknown[0]!r}; known: {', '.join(QUERY)}")
    principal, target = request.args.get("principal"), request.args.get("target")
    if principal is not None and not principal:
        raise BadRequest("principal must be a principal's uuid or name")
    if target is not None and not target:
        raise BadRequest("target must be a uuid or a name")
    limit = request.args.get("limit", "100")
    if not limit.isdigit() or not 1 <= int(limit) <= 1000:
        raise BadRequest("limit must be a whole number from 1 to 1000")
    after = request.args.get("after")
    if after is not None and not (after.isdigit() and len(after) <= 18):
        raise BadRequest("after must be the `next` of the previous page (a whole number)")
    entries, more = audit.page(store().core, principal=principal, target=target,
                               since=parse_since(request.args.get("since"), BadRequest),
                               before=None if after is None else int(after), limit=int(limit))
    return jsonify({"entries": entries, "next": None if more is None else str(more)})


__all__ = ["REFUSABLE", "bp", "record_refusal"]
