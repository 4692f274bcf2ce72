"""The Auth subset: tokens, and principals with passwords (ours: ACS logs in by Kerberos)."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from .. import uuids
from .._domain.auth import enrolment, principals
from .._domain.common.errors import Forbidden, Unprocessable
from .auth import bearer_token, caller, login, require, store
from .grant_routes import GRANT_UUIDS
from .params import has_body, json_body, lower_uuid_fields

bp = Blueprint("auth", __name__)
A = uuids.AuthPerm


@bp.post("/token")
def token() -> Response:
    """A token for a password login; a token cannot mint tokens (403)."""
    proved = login()
    if proved is None:
        raise Forbidden("a Bearer token cannot obtain another token: POST /token with HTTP "
                        "Basic (name and password)")
    value, expiry = principals.issue_token(store().core, proved)
    return jsonify({"token": value, "expiry": expiry})


@bp.delete("/token")
def end_token() -> tuple[str, int]:
    """Sign out: the Bearer token this is sent with stops working, with its notify
    sessions (422 for Basic credentials: there is no token to end)."""
    token = bearer_token()
    if token is None:
        raise Unprocessable("DELETE /token ends the Bearer token it is sent with; this "
                            "request sent a password instead")
    principals.end_token(store().core, token)
    return "", 204


@bp.post("/v2/principal")
def create_principal() -> tuple[Response, int]:
    body = lower_uuid_fields(json_body(), ("uuid", "class", "groups"))
    if isinstance(body, dict) and isinstance(wanted := body.get("grants"), list):
        body["grants"] = [lower_uuid_fields(g, GRANT_UUIDS) for g in wanted]
    enrolled = enrolment.parse(body)
    uuid, created = enrolment.create(store().core, store().schemas, caller(), enrolled)
    return jsonify({"uuid": uuid, "name": enrolled.name}), 201 if created else 200


@bp.put("/v2/principal/<uuid:principal>/password")
def set_password(principal: str) -> tuple[str, int]:
    require(A.WriteKerberos, principal)
    password = json_body()
    if not isinstance(password, str) or not password:
        raise Unprocessable("body must be a non-empty JSON string")
    principals.set_password(store().core, principal, password)
    return "", 204


@bp.post("/v2/principal/<uuid:principal>/password")
def generate_password(principal: str) -> Response:
    """A generated password; ``{"previousValidFor": s}`` keeps the old one for a while."""
    require(A.WriteKerberos, principal)
    grace = principals.parse_rotation(json_body() if has_body() else {})
    password, until = principals.generate_password(store().core, principal, grace)
    answer: dict[str, str | int] = {"password": password}
    if until is not None:
        answer["previousValidUntil"] = int(until * 1000)
    return jsonify(answer)


@bp.delete("/v2/principal/<uuid:principal>")
def delete_principal(principal: str) -> tuple[str, int]:
    require(A.WriteKerberos, principal)
    principals.remove(store().core, principal)
    return "", 204
