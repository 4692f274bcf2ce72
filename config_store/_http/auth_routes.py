"""The Auth subset: tokens, principals, grants, ACLs and whoami."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from .. import uuids
from .._domain import enrolment, grants, principals
from .._domain.errors import Forbidden, NotFound, Unprocessable
from .auth import allowed, caller, login, require, store
from .params import has_body, json_body, lower_uuid_fields

bp = Blueprint("auth", __name__)
A = uuids.AuthPerm
_GRANT_UUIDS = ("principal", "permission", "target", "object")


@bp.post("/token")
def token() -> Response:
    """A token for a password login; a token cannot mint tokens (403)."""
    proved = login()
    if proved is None:
        raise Forbidden("a Bearer token cannot obtain another token: POST /token with HTTP "
                        "Basic (name and password)")
    value, expiry = principals.issue_token(store().core, proved)
    return jsonify({"token": value, "expiry": expiry})


@bp.get("/v2/whoami")
def whoami() -> Response:
    core = store().core
    name = core.storage.reader().principal_name(caller())
    return jsonify({"uuid": caller(), "name": name, "root": core.acl.is_root(caller())})


@bp.get("/v2/whoami/uuid")
def whoami_uuid() -> Response:
    return jsonify(caller())


@bp.get("/v2/principal")
def list_principals() -> Response:
    require(A.ReadKerberos, uuids.NULL)
    return jsonify(principals.listing(store().core))


@bp.post("/v2/principal")
def create_principal() -> tuple[Response, int]:
    body = lower_uuid_fields(json_body(), ("uuid", "class", "groups"))
    if isinstance(body, dict) and isinstance(body.get("grants"), list):
        body["grants"] = [lower_uuid_fields(g, _GRANT_UUIDS) for g in body["grants"]]
    wanted = enrolment.parse(body)
    uuid, created = enrolment.create(store().core, store().schemas, caller(), wanted)
    return jsonify({"uuid": uuid, "name": wanted.name}), 201 if created else 200


@bp.get("/v2/principal/<uuid:principal>")
def get_principal(principal: str) -> Response:
    require(A.ReadKerberos, principal)
    return jsonify(principals.describe(store().core, principal))


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
    answer: dict[str, Any] = {"password": password}
    if until is not None:
        answer["previousValidUntil"] = int(until * 1000)
    return jsonify(answer)


@bp.delete("/v2/principal/<uuid:principal>")
def delete_principal(principal: str) -> tuple[str, int]:
    require(A.WriteKerberos, principal)
    principals.remove(store().core, principal)
    return "", 204


@bp.get("/v2/identity/kerberos/<path:name>")
def identity(name: str) -> Response:
    require(A.ReadKerberos, uuids.NULL)
    found = principals.find(store().core, name)
    if found is None:
        raise NotFound(f"no principal named {name!r}")
    return jsonify(found)


@bp.get("/v2/acl/<uuid:principal>")
def acl(principal: str) -> Response:
    """The ACL of a principal (a member of the Principal class); 404 for any other uuid, as
    upstream (acs-auth lib/api_v2.js ``_get_acl``: no ACL for a non-principal)."""
    if not store().core.graph.is_member(principal, uuids.Class.Principal):
        raise NotFound(f"{principal} is not a principal")
    return jsonify(_readable_acl(principal))


@bp.get("/v2/acl/kerberos/<path:name>")
def acl_by_name(name: str) -> Response:
    """The ACL by name. A caller who may not read that principal's name (ReadKerberos on
    it) gets ``[]`` whether the name exists or not, so the route reveals no names; only one
    who may resolve every name (ReadKerberos on the wildcard) hears 404 for unknown ones."""
    found = principals.find(store().core, name)
    if found is None and allowed(A.ReadKerberos, uuids.NULL):
        raise NotFound(f"no principal named {name!r}")
    if found is None or not allowed(A.ReadKerberos, found):
        return jsonify([])
    return jsonify(_readable_acl(found))


def _readable_acl(principal: str) -> list[dict[str, str]]:
    """The ACL filtered to permissions the caller may read (ReadACL on each)."""
    entries = store().core.acl.expanded(principal)
    return [e for e in entries if allowed(A.ReadACL, e["permission"])]


@bp.post("/v2/grant")
def add_grant() -> tuple[Response, int]:
    grant = grants.parse(lower_uuid_fields(json_body(), _GRANT_UUIDS))
    uuid, created = grants.add(store().core, caller(), grant)
    return jsonify({"uuid": uuid}), 201 if created else 200


@bp.post("/v2/grant/find")
def find_grants() -> Response:
    pattern = lower_uuid_fields(json_body(), _GRANT_UUIDS)
    found = store().core.acl.find(**grants.parse_pattern(pattern))
    return jsonify(sorted(g.uuid for g in found if allowed(A.ReadACL, g.permission)))


@bp.get("/v2/grant/<uuid:grant>")
def get_grant(grant: str) -> Response:
    found = grants.get(store().core, grant)
    require(A.ReadACL, found.permission)
    return jsonify(grants.to_json(found))


@bp.delete("/v2/grant/<uuid:grant>")
def delete_grant(grant: str) -> tuple[str, int]:
    found = grants.get(store().core, grant)
    require(A.WriteACL, found.permission)
    grants.delete(store().core, grant)
    return "", 204
