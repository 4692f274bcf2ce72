"""Who is who: whoami, principals by identity, identities by kind, principal groups.

Shapes and status codes are upstream's (acs-auth lib/api_v2.js): ``GET /v2/whoami`` and
``GET /v2/principal/:p`` answer ``{<kind>: <name>, …, "uuid"}``, ``GET /v2/principal`` a
list of uuids, and an empty result is 404. Our richer forms are opt-in with
``?detail=true``: ``{uuid, name, root}`` for whoami, ``{uuid, name}`` per principal.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from .. import uuids
from .._domain.auth import identities, principals
from .._domain.common.errors import Forbidden, NotFound
from .auth import caller, require, store
from .params import detailed, json_body

bp = Blueprint("identities", __name__)
A = uuids.AuthPerm


@bp.get("/v2/whoami")
def whoami() -> Response:
    """The caller's identities (``id_whoami``); no permission needed."""
    core = store().core
    if detailed():
        name = core.reader().principal_name(caller())
        return jsonify({"uuid": caller(), "name": name, "root": core.acl.is_root(caller())})
    return jsonify(identities.of(core, caller()))


@bp.get("/v2/whoami/uuid")
def whoami_uuid() -> Response:
    return jsonify(caller())


@bp.get("/v2/principal")
def list_principals() -> Response:
    """The uuids of principals with an identity (``id_list``); 404 if none."""
    core = store().core
    if detailed():
        require(A.ReadKerberos, uuids.NULL)
        return jsonify(principals.listing(core))
    return jsonify(identities.principal_uuids(core, caller()))


@bp.get("/v2/principal/<uuid:principal>")
def get_principal(principal: str) -> Response:
    core = store().core
    if detailed():
        require(A.ReadKerberos, principal)
        return jsonify(principals.describe(core, principal))
    _may_read(principal)
    return jsonify(identities.of(core, principal))


@bp.get("/v2/principal/<uuid:principal>/groups")
def principal_groups(principal: str) -> Response:
    """The principal groups it belongs to, at any depth (``id_groups``)."""
    return jsonify(identities.groups(store().core, caller(), principal))


@bp.get("/v2/principal/<uuid:principal>/<kind>")
def get_identity(principal: str, kind: str) -> Response:
    """Its name of ``kind``, a JSON string (``id_get``)."""
    _may_read(principal)
    found = identities.names_of(store().core, principal).get(kind)
    if found is None:
        raise NotFound(f"principal {principal} has no {kind} identity")
    return jsonify(found)


@bp.put("/v2/principal/<uuid:principal>/<kind>")
def put_identity(principal: str, kind: str) -> tuple[str, int]:
    """Set its identity of ``kind`` from a JSON string body (``id_put``)."""
    identities.put(store().core, caller(), principal, kind, json_body())
    return "", 204


@bp.delete("/v2/principal/<uuid:principal>/<kind>")
def delete_identity(principal: str, kind: str) -> tuple[str, int]:
    identities.delete(store().core, caller(), principal, kind)
    return "", 204


@bp.get("/v2/identity")
def identity_kinds() -> Response:
    """The identity kinds this server knows (``id_kinds``)."""
    return jsonify(list(identities.KINDS))


@bp.get("/v2/identity/<kind>")
def identity_names(kind: str) -> Response:
    """Every name of ``kind`` (``id_list_kind``); 404 if none."""
    return jsonify(identities.names(store().core, caller(), kind))


@bp.get("/v2/identity/<kind>/<path:name>")
def identity(kind: str, name: str) -> Response:
    """The uuid of the principal ``name`` of ``kind`` names (``id_find``)."""
    _may_read()
    found = identities.lookup(store().core, kind, name)
    if found is None:
        raise NotFound(f"no principal has the {kind} identity {name!r}")
    return jsonify(found)


def _may_read(principal: str = uuids.NULL) -> None:
    """403 unless the caller may read identities (of ``principal``), before anything is
    told."""
    if not identities.may_read(store().core, caller(), principal):
        raise Forbidden("permission denied: reading identities needs ReadKerberos")
