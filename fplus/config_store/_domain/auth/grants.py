"""Grants (ACEs): parsing, the grant rule, storing, reading and deleting.

Creating a grant needs WriteACL on its permission and, by the grant rule (least privilege,
ours; see :mod:`..core.acl`), that the caller hold the permission being granted on the granted
target in the same or a wider form, or hold ``Auth.Perm.Grant`` there. The root principal
is exempt. Deleting a grant needs WriteACL on its permission only.
"""

from __future__ import annotations

import dataclasses
from typing import TypedDict

from fplus.jsontypes import JsonObject

from ... import uuids
from ..._storage import GrantRow
from ...uuids import is_uuid
from ..common.errors import Conflict, Forbidden, NotFound, Unprocessable
from ..core.state import Core
from ..core.tx import Tx, new_uuid
from . import audit

_FIELDS = ("principal", "permission", "target")


def parse(body: object) -> GrantRow:
    """Validate a grant body ``{principal, permission, target, plural?, object?}``."""
    if not isinstance(body, dict):
        raise Unprocessable("grant must be a JSON object")
    extra = set(body) - {*_FIELDS, "plural", "object", "uuid"}
    if extra:
        raise Unprocessable(f"unknown grant fields: {sorted(extra)}")
    principal, permission, target = (_uuid_field(body, field) for field in _FIELDS)
    obj = body.get("object")
    if obj is not None and not is_uuid(obj):
        raise Unprocessable("grant object must be a UUID or null")
    plural = body.get("plural", False)
    if not isinstance(plural, bool):
        raise Unprocessable("grant plural must be a boolean")
    return GrantRow("", principal, permission, target, plural, obj)


def _uuid_field(body: dict[str, object], field: str) -> str:
    value = body.get(field)
    if not is_uuid(value):
        raise Unprocessable(f"grant {field} must be a UUID")
    return value


class GrantPattern(TypedDict):
    """A ``grant/find`` pattern, as :meth:`~..core.acl.Acl.find` takes it (None: any)."""

    principal: str | None
    permission: str | None
    target: str | None
    plural: bool | None
    obj: str | None


def _optional_uuid(body: dict[str, object], field: str) -> str | None:
    value = body.get(field)
    if value is not None and not is_uuid(value):
        raise Unprocessable(f"pattern {field} must be a UUID or null")
    return value


def parse_pattern(body: object) -> GrantPattern:
    """Validate a ``grant/find`` pattern; absent or null fields match anything."""
    if not isinstance(body, dict):
        raise Unprocessable("pattern must be a JSON object")
    extra = set(body) - {*_FIELDS, "plural", "object"}
    if extra:
        raise Unprocessable(f"unknown pattern fields: {sorted(extra)}")
    principal, permission, target, obj = (_optional_uuid(body, field)
                                          for field in (*_FIELDS, "object"))
    plural = body.get("plural")
    if plural is not None and not isinstance(plural, bool):
        raise Unprocessable("pattern plural must be a boolean or null")
    return {"principal": principal, "permission": permission, "target": target,
            "plural": plural, "obj": obj}


def authorise(core: Core, caller: str, grant: GrantRow) -> None:
    """403 unless ``caller`` may create ``grant`` (WriteACL and the grant rule)."""
    if not core.acl.check(caller, uuids.AuthPerm.WriteACL, grant.permission):
        raise Forbidden(f"permission denied: granting {grant.permission} needs WriteACL on it")
    if not core.acl.may_grant(caller, grant):
        raise Forbidden(
            f"permission denied: you may grant {grant.permission} on {grant.target} only if "
            "you hold it there yourself in the same or a wider form (or hold Grant there)")


def add(core: Core, caller: str, grant: GrantRow) -> tuple[str, bool]:
    """Authorise and store a grant unless an identical one exists; ``(uuid, created)``."""
    with core.transaction() as tx:
        authorise(core, caller, grant)  # decided on the state the write sees
        uuid, created = add_in(core, tx, grant)
        if created:
            record_added(tx, dataclasses.replace(grant, uuid=uuid))
        return uuid, created


def record_added(tx: Tx, grant: GrantRow) -> None:
    """The audit row of a grant stored in ``tx`` (named by its grantee's name)."""
    audit.record(tx, "grant.add", "grant", grant.uuid,
                 target_principal=grant.principal,
                 detail=audit.grant_detail(grant))


def add_in(core: Core, tx: Tx, grant: GrantRow) -> tuple[str, bool]:
    """Store an authorised grant within ``tx`` unless an identical one exists."""
    same = [g for g in core.acl.find(grant.principal, grant.permission, grant.target,
                                     grant.plural, grant.object) if g.object == grant.object]
    if same:
        return same[0].uuid, False
    row = GrantRow(new_uuid(), grant.principal, grant.permission, grant.target, grant.plural,
                   grant.object)
    tx.put_grant(row)
    return row.uuid, True


def replace(core: Core, caller: str, uuid: str, grant: GrantRow) -> None:
    """Replace grant ``uuid`` with ``grant`` under the same uuid (``PUT /v2/grant/:g``):
    needs WriteACL on both permissions and the grant rule for the new one; 404 if unknown,
    409 if another grant is already the same (acs-auth lib/model.js ``grant_request``, and
    its unique index)."""
    with core.transaction() as tx:
        if not core.acl.check(caller, uuids.AuthPerm.WriteACL, grant.permission):
            raise Forbidden(f"permission denied: granting {grant.permission} needs WriteACL "
                            "on it")
        old = get(core, uuid)
        if not core.acl.check(caller, uuids.AuthPerm.WriteACL, old.permission):
            raise Forbidden(f"permission denied: changing a grant of {old.permission} needs "
                            "WriteACL on it")
        authorise(core, caller, grant)
        twins = [g.uuid for g in core.acl.find(grant.principal, grant.permission, grant.target,
                                               grant.plural, grant.object)
                 if g.object == grant.object and g.uuid != uuid]
        if twins:
            raise Conflict(f"grant {twins[0]} is already that grant")
        tx.delete_grants([uuid])
        tx.put_grant(dataclasses.replace(grant, uuid=uuid))
        audit.record(tx, "grant.replace", "grant", uuid,
                     target_principal=grant.principal,
                     detail={**audit.grant_detail(grant), "was": audit.grant_detail(old)})


def writable(core: Core, caller: str) -> list[str]:
    """The uuids of the grants ``caller`` may change (WriteACL on their permission), for
    ``GET /v2/grant``; 403 if it holds WriteACL on nothing (acs-auth lib/api_v2.js
    ``grant_list``)."""
    acl = core.acl
    if not acl.holds_any(caller, uuids.AuthPerm.WriteACL):
        raise Forbidden("permission denied: listing grants needs WriteACL")
    return sorted(g.uuid for g in list(acl.grants.values())
                  if acl.check(caller, uuids.AuthPerm.WriteACL, g.permission))


def readable_acl(core: Core, caller: str, principal: str) -> list[dict[str, str]]:
    """``principal``'s ACL as ``caller`` may read it (upstream ``_get_acl``): 404 unless it
    is a principal, 403 if ``caller`` holds ReadACL on nothing, else the entries whose
    permission it holds ReadACL on."""
    acl = core.acl
    if not core.graph.is_member(principal, uuids.Class.Principal):
        raise NotFound(f"{principal} is not a principal")
    if not acl.holds_any(caller, uuids.AuthPerm.ReadACL):
        raise Forbidden("permission denied: reading ACLs needs ReadACL")
    return [e for e in acl.expanded(principal)
            if acl.check(caller, uuids.AuthPerm.ReadACL, e["permission"])]


def to_json(grant: GrantRow) -> JsonObject:
    """A grant as returned by the API."""
    out: JsonObject = {"uuid": grant.uuid, "principal": grant.principal,
                           "permission": grant.permission, "target": grant.target,
                           "plural": grant.plural}
    if grant.object is not None:
        out["object"] = grant.object
    return out


def get(core: Core, uuid: str) -> GrantRow:
    """A grant by uuid (404 if unknown)."""
    grant = core.acl.grants.get(uuid)
    if grant is None:
        raise NotFound(f"grant {uuid} not found")
    return grant


def delete(core: Core, uuid: str) -> None:
    """Delete a grant (404 if unknown)."""
    get(core, uuid)
    with core.transaction() as tx:
        old = get(core, uuid)  # as the write sees it
        tx.delete_grants([uuid])
        audit.record(tx, "grant.remove", "grant", uuid,
                     target_principal=old.principal,
                     detail=audit.grant_detail(old))
