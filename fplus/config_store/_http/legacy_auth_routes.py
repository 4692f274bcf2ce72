"""Upstream's legacy Auth routes, as its clients still use them (acs-auth lib/authz.js and
lib/authn.js): ``/authz/acl`` and ``/authz/principal`` answer as their v2 forms, the routes
upstream removed answer 410, and the old groups, which never existed here, read as empty.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from .. import uuids
from .._domain import identities
from .._domain.errors import BadRequest, Forbidden, Gone, NotFound
from ..uuids import is_uuid
from . import grant_routes, identity_routes
from .auth import allowed, caller, store

bp = Blueprint("legacy_auth", __name__)
A = uuids.AuthPerm
BOOLEANS = {"true": True, "false": False, "1": True, "0": False,
            "on": True, "off": False, "yes": True, "no": False}
"""Upstream's query-string booleans (acs-auth lib/validate.js ``booleans``): exact, and
absent is false."""


def gone(**_: str) -> tuple[str, int]:
    """A route upstream removed."""
    return "", 410


for rule, methods in (("/authz/principal", ["GET", "POST"]), ("/authz/ace", ["GET", "POST"]),
                      ("/authz/effective", ["GET"]), ("/authz/effective/<principal>", ["GET"]),
                      ("/authz/group/<group>/<member>", ["PUT"])):
    bp.add_url_rule(rule, f"gone{rule}", gone, methods=methods)


@bp.get("/authz/acl")
def acl() -> Response:
    """``?principal=&permission=&by-uuid=``: the v2 ACL (``permission`` is checked, not
    used: every readable permission is returned)."""
    given = request.args.get("by-uuid")
    by_uuid = False if given is None else BOOLEANS.get(given)
    if by_uuid is None:
        raise BadRequest("by-uuid must be a boolean")
    principal = request.args.get("principal", "")
    valid = is_uuid(principal) if by_uuid else identities.UPN.match(principal)
    if not valid or not is_uuid(request.args.get("permission", "")):
        raise Gone("principal or permission malformed")
    if by_uuid:
        return grant_routes.acl(principal)
    return grant_routes.acl_by_name(principal)


@bp.get("/authz/principal/find")
def principal_find() -> Response:
    """``?kerberos=``: the uuid it names; without it, the caller's uuid."""
    kerberos = request.args.get("kerberos")
    if kerberos is None:
        return identity_routes.whoami_uuid()
    return identity_routes.identity(identities.KERBEROS, kerberos)


@bp.get("/authz/principal/<uuid:principal>")
def principal_get(principal: str) -> Response:
    """``{uuid, kerberos}``: a principal's Kerberos name, readable by itself or with
    ReadKerberos on it."""
    if principal != caller() and not allowed(A.ReadKerberos, principal):
        raise Forbidden("permission denied")
    kerberos = identities.names_of(store().core, principal).get(identities.KERBEROS)
    if kerberos is None:
        raise NotFound(f"principal {principal} has no Kerberos identity")
    return jsonify({"uuid": principal, "kerberos": kerberos})


@bp.delete("/authz/principal/<uuid:principal>")
def principal_delete(principal: str) -> tuple[str, int]:
    return gone()


@bp.get("/authz/group/all")
@bp.get("/authz/group")
@bp.get("/authz/group/<uuid:group>")
def groups(group: str | None = None) -> Response:
    """The old Auth groups: none here (upstream's migration-only interface)."""
    _manage_groups()
    return jsonify([])


@bp.delete("/authz/group/<uuid:group>/<uuid:member>")
def group_delete(group: str, member: str) -> tuple[str, int]:
    _manage_groups()
    return "", 204


def _manage_groups() -> None:
    if not allowed(A.ManageGroup, uuids.NULL, wild=False):
        raise Forbidden("permission denied: the old groups need ManageGroup on the wildcard")


@bp.route("/authn/authenticate", methods=["GET", "POST", "PUT", "DELETE", "PATCH"])
def authenticate() -> Response:
    """Credentials check: ``{"ok": true}`` and who they prove in ``X-Auth-Principal`` (its
    Kerberos name, or its login name)."""
    mine = identities.names_of(store().core, caller())
    answer = jsonify({"ok": True})
    answer.headers["X-Auth-Principal"] = mine.get(identities.KERBEROS,
                                                  mine.get(identities.LOGIN, caller()))
    return answer
