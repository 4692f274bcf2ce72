"""The Auth subset: tokens, principals, grants, ACLs and whoami."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from .. import uuids
from .._domain import configs, objects, principals
from .._domain.errors import NotFound, Unprocessable
from .._storage import GrantRow
from ..uuids import is_uuid
from .auth import allowed, caller, require, store
from .params import has_body, json_body, lower_uuid_fields

bp = Blueprint("auth", __name__)
A = uuids.AuthPerm
P = uuids.ConfigDBPerm
_GRANT_UUIDS = ("principal", "permission", "target", "object")


@bp.post("/token")
def token() -> Response:
    value, expiry = store().core.sessions.issue_token(caller())
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
    if not isinstance(body, dict) or not isinstance(body.get("name"), str):
        raise Unprocessable('body must be {"name": str, "password"?: str, "uuid"?, "class"?, '
                            '"label"?: str, "groups"?: [uuid], "grants"?: [grant]}')
    password = body.get("password")
    if password is not None and (not isinstance(password, str) or not password):
        raise Unprocessable("password must be a non-empty string")
    klass = body.get("class", uuids.Class.Principal)
    if not is_uuid(klass) or (body.get("uuid") is not None and not is_uuid(body["uuid"])):
        raise Unprocessable("class and uuid must be UUIDs")
    label, groups, grants = _extras(body)
    require(A.WriteKerberos, klass)
    require(uuids.ConfigDBPerm.CreateObj, klass)
    for group in groups:
        require(P.WriteMembers, group)
    for grant in grants:
        require(A.WriteACL, grant.permission)
    core = store().core
    # Re-passwording an existing principal, or making an existing object a principal,
    # acts on that object: it needs WriteKerberos on it, not just on the class.
    target = body.get("uuid") or principals.find_exact(core, body["name"])
    if target is not None and core.graph.get(target) is not None and (
            password is not None or not core.graph.is_member(target, uuids.Class.Principal)):
        require(A.WriteKerberos, target)
    uuid, created = principals.create(core, caller(), body["name"], password,
                                      body.get("uuid"), klass)
    _apply_extras(uuid, label, groups, grants)
    return jsonify({"uuid": uuid, "name": body["name"]}), 201 if created else 200


def _extras(body: dict[str, Any]) -> tuple[str | None, list[str], list[GrantRow]]:
    """The extension fields: an Info name, class memberships and grants, validated."""
    label, groups, grants = body.get("label"), body.get("groups", []), body.get("grants", [])
    if label is not None and (not isinstance(label, str) or not label):
        raise Unprocessable("label must be a non-empty string")
    if not isinstance(groups, list) or not all(is_uuid(g) for g in groups):
        raise Unprocessable("groups must be a list of class UUIDs")
    if not isinstance(grants, list) or not all(isinstance(g, dict) for g in grants):
        raise Unprocessable("grants must be a list of {permission, target, plural?, object?}")
    parsed = [principals.parse_grant({**g, "principal": uuids.NULL}) for g in grants]
    return label, groups, parsed


def _apply_extras(uuid: str, label: str | None, groups: list[str],
                  grants: list[GrantRow]) -> None:
    """Name, group and grant a principal, as the separate routes would (idempotent)."""
    core = store().core
    if groups:
        require(P.WriteMemberships, uuid)
    for group in groups:
        objects.set_member(core, group, uuid, True)
    if label is not None:
        require(P.WriteApp, uuids.App.Info, obj=uuid)
        configs.patch(core, store().schemas, caller(), uuids.App.Info, uuid, {"name": label})
    for grant in grants:
        principals.add_grant(core, GrantRow("", uuid, grant.permission, grant.target,
                                            grant.plural, grant.object))


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
    return jsonify(_readable_acl(principal))


@bp.get("/v2/acl/kerberos/<path:name>")
def acl_by_name(name: str) -> Response:
    found = principals.find(store().core, name)
    if found is None:
        raise NotFound(f"no principal named {name!r}")
    return jsonify(_readable_acl(found))


def _readable_acl(principal: str) -> list[dict[str, str]]:
    """The ACL filtered to permissions the caller may read (ReadACL on each)."""
    entries = store().core.acl.expanded(principal)
    return [e for e in entries if allowed(A.ReadACL, e["permission"])]


@bp.post("/v2/grant")
def add_grant() -> tuple[Response, int]:
    grant = principals.parse_grant(lower_uuid_fields(json_body(), _GRANT_UUIDS))
    require(A.WriteACL, grant.permission)
    uuid, created = principals.add_grant(store().core, grant)
    return jsonify({"uuid": uuid}), 201 if created else 200


@bp.post("/v2/grant/find")
def find_grants() -> Response:
    pattern = lower_uuid_fields(json_body(), _GRANT_UUIDS)
    found = store().core.acl.find(**principals.parse_grant_pattern(pattern))
    return jsonify(sorted(g.uuid for g in found if allowed(A.ReadACL, g.permission)))


@bp.get("/v2/grant/<uuid:grant>")
def get_grant(grant: str) -> Response:
    found = principals.get_grant(store().core, grant)
    require(A.ReadACL, found.permission)
    return jsonify(principals.grant_json(found))


@bp.delete("/v2/grant/<uuid:grant>")
def delete_grant(grant: str) -> tuple[str, int]:
    found = principals.get_grant(store().core, grant)
    require(A.WriteACL, found.permission)
    principals.delete_grant(store().core, grant)
    return "", 204
