"""Auth grants and ACLs, with upstream's routes, status codes and shapes (acs-auth
lib/api_v2.js).

Ours beside upstream: reading a grant (``GET /v2/grant/:g``, ``POST /v2/grant/find``) is
allowed with ReadACL as well as WriteACL on its permission; ``GET /v2/acl/kerberos/:upn``
answers ``[]`` to a caller who may not read that principal's identity (ReadKerberos), so
the route tells no one which names exist.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from .. import uuids
from .._domain import grants, identities
from .._domain.errors import Forbidden
from .._storage import GrantRow
from .auth import allowed, caller, require, store
from .params import json_body, lower_uuid_fields

bp = Blueprint("grants", __name__)
A = uuids.AuthPerm
GRANT_UUIDS = ("principal", "permission", "target", "object")


def _may_read_grant(grant: GrantRow) -> bool:
    return allowed(A.ReadACL, grant.permission) or allowed(A.WriteACL, grant.permission)


@bp.get("/v2/acl/<uuid:principal>")
def acl(principal: str) -> Response:
    """The ACL of a principal (a member of the Principal class), filtered by ReadACL."""
    return jsonify(grants.readable_acl(store().core, caller(), principal))


@bp.get("/v2/acl/kerberos/<path:name>")
def acl_by_name(name: str) -> Response:
    """The ACL by Kerberos name (or, ours, login name); ``[]`` for an unknown one, as
    upstream (``get_krb_acl``: "Don't return 404, we haven't checked ACLs")."""
    return jsonify(identities.acl_of_name(store().core, caller(), name))


@bp.get("/v2/grant")
def list_grants() -> Response:
    """The uuids of the grants the caller may change (``grant_list``)."""
    return jsonify(grants.writable(store().core, caller()))


@bp.post("/v2/grant")
def add_grant() -> tuple[Response, int]:
    grant = grants.parse(lower_uuid_fields(json_body(), GRANT_UUIDS))
    uuid, created = grants.add(store().core, caller(), grant)
    return jsonify({"uuid": uuid}), 201 if created else 200


@bp.post("/v2/grant/find")
def find_grants() -> Response:
    pattern = grants.parse_pattern(lower_uuid_fields(json_body(), GRANT_UUIDS))
    acl = store().core.acl
    if not (acl.holds_any(caller(), A.ReadACL) or acl.holds_any(caller(), A.WriteACL)):
        raise Forbidden("permission denied: finding grants needs ReadACL or WriteACL")
    found = acl.find(**pattern)
    return jsonify(sorted(g.uuid for g in found if _may_read_grant(g)))


@bp.get("/v2/grant/<uuid:grant>")
def get_grant(grant: str) -> Response:
    found = grants.get(store().core, grant)
    if not _may_read_grant(found):
        raise Forbidden("permission denied: reading a grant needs ReadACL or WriteACL on "
                        "its permission")
    return jsonify(grants.to_json(found))


@bp.put("/v2/grant/<uuid:grant>")
def put_grant(grant: str) -> tuple[str, int]:
    """Replace a grant, keeping its uuid (``grant_put``): 204, 403, 404 or 422."""
    replacement = grants.parse(lower_uuid_fields(json_body(), GRANT_UUIDS))
    grants.replace(store().core, caller(), grant, replacement)
    return "", 204


@bp.delete("/v2/grant/<uuid:grant>")
def delete_grant(grant: str) -> tuple[str, int]:
    found = grants.get(store().core, grant)
    require(A.WriteACL, found.permission)
    grants.delete(store().core, grant)
    return "", 204
