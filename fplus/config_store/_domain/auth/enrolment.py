"""Creating a principal in one request, all or nothing (``POST /v2/principal``).

Beyond ACS's ``{name, password?, uuid?, class?}`` (an extension): ``label`` (its Info name),
``groups`` (classes it joins directly) and ``grants`` for it. Every permission is checked
before anything is written, and again inside the one transaction that writes everything,
on the state the writes see: a refused request leaves nothing behind.

Permissions: WriteKerberos and CreateObj on the class; WriteKerberos on the principal itself
to re-password an existing one or to make an existing object a principal; WriteMembers on
each group and WriteMemberships on the principal (as it will be: a member of the class, owned
by the caller); WriteApp on Info for the principal's entry (``label``; a grant restricted to
``Mine`` covers a principal the caller creates, which it will own); each grant by the
grant rule (:mod:`.grants`). Names are unique regardless of case (409).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fplus.jsontypes import JsonObject, strings

from ... import uuids
from ..._storage import GrantRow
from ...uuids import is_uuid
from ..common.errors import Conflict, Forbidden, NotFound, Unprocessable
from ..common.jsonvalue import parse as parse_json
from ..configdb import objects
from ..configdb.schemas import SchemaCache
from ..core.acl import Prospect
from ..core.credentials import hash_password
from ..core.graph import Obj
from ..core.state import Core
from ..core.tx import Tx, new_uuid
from . import audit, grants
from .principals import NAME

A, P = uuids.AuthPerm, uuids.ConfigDBPerm
USAGE = ('body must be {"name": str, "password"?: str, "uuid"?, "class"?, "label"?: str, '
         '"groups"?: [uuid], "grants"?: [grant]}')


@dataclass(frozen=True)
class Enrolment:
    """A validated ``POST /v2/principal`` body (grants name no principal yet)."""

    name: str
    password: str | None = None
    uuid: str | None = None
    klass: str = uuids.Class.Principal
    label: str | None = None
    groups: tuple[str, ...] = ()
    grants: tuple[GrantRow, ...] = ()


def parse(body: object) -> Enrolment:
    """Validate a body (UUID fields already lower-cased); 422 saying what is wrong."""
    name = body.get("name") if isinstance(body, dict) else None
    if not isinstance(body, dict) or not isinstance(name, str):
        raise Unprocessable(USAGE)
    if not NAME.match(name):
        raise Unprocessable("principal name must be 1-253 of [A-Za-z0-9._@/+-]")
    password = body.get("password")
    if password is not None and (not isinstance(password, str) or not password):
        raise Unprocessable("password must be a non-empty string")
    klass, uuid = body.get("class", uuids.Class.Principal), body.get("uuid")
    if not is_uuid(klass) or (uuid is not None and not is_uuid(uuid)):
        raise Unprocessable("class and uuid must be UUIDs")
    label, groups, wanted = body.get("label"), body.get("groups", []), body.get("grants", [])
    if label is not None and (not isinstance(label, str) or not label):
        raise Unprocessable("label must be a non-empty string")
    if not isinstance(groups, list) or not all(is_uuid(g) for g in groups):
        raise Unprocessable("groups must be a list of class UUIDs")
    if not isinstance(wanted, list) or not all(isinstance(g, dict) for g in wanted):
        raise Unprocessable("grants must be a list of {permission, target, plural?, object?}")
    parsed = [grants.parse({**g, "principal": uuids.NULL}) for g in wanted]
    return Enrolment(name, password, uuid, klass, label,
                     tuple(dict.fromkeys(strings(groups))), tuple(dict.fromkeys(parsed)))


@dataclass(frozen=True)
class _Plan:
    """What a request will do, decided on the current state."""

    uuid: str
    cls: Obj
    existing: Obj | None  # the object, if it exists already
    created: bool  # a principal of that name is new
    prospect: Prospect | None  # the object as it will be, when this request changes it
    fresh: bool = False  # its uuid was made for this request: nothing is stored under it


def create(core: Core, schemas: SchemaCache, caller: str, req: Enrolment) -> tuple[str, bool]:
    """Create (or re-password, name, group, grant) a principal; ``(uuid, created)``."""
    hashed = None
    if req.password is not None:
        _plan_and_authorise(core, caller, req)  # refuse before hashing costs anything
        hashed = hash_password(req.password)
    with core.transaction() as tx:
        plan = _plan_and_authorise(core, caller, req)  # the state may have moved meanwhile
        info = _labelled_info(core, schemas, plan.uuid, req.label, fresh=plan.fresh)
        previous_name = None if plan.fresh else tx.w.principal_name(plan.uuid)
        if previous_name is not None and previous_name != req.name:
            raise Conflict("principal exists with another name")
        _write(core, tx, req, plan, hashed, info, new_principal=previous_name is None)
    return plan.uuid, plan.created


def _plan_and_authorise(core: Core, caller: str, req: Enrolment) -> _Plan:
    acl = core.acl
    for perm, what in ((A.WriteKerberos, "WriteKerberos"), (P.CreateObj, "CreateObj")):
        if not acl.check(caller, perm, req.klass):
            raise Forbidden(f"permission denied: creating principals of class {req.klass} "
                            f"needs {what} on it")
    plan = _plan(core, caller, req)
    if plan.existing is not None and (req.password is not None or plan.prospect is not None):
        _need(acl.check(caller, A.WriteKerberos, plan.uuid),
              f"changing the existing object {plan.uuid} needs WriteKerberos on it")
    for group in req.groups:
        _need(acl.check(caller, P.WriteMembers, group),
              f"adding members to {group} needs WriteMembers on it")
    if req.groups:
        _need(acl.check(caller, P.WriteMemberships, plan.uuid, prospect=plan.prospect),
              "grouping the principal needs WriteMemberships on it")
    if req.label is not None:
        _need(acl.check(caller, P.WriteApp, uuids.App.Info, obj=plan.uuid,
                        obj_owner=plan.prospect.owner if plan.prospect and plan.existing is None
                        else None),
              "labelling the principal needs WriteApp on its Info entry")
    for grant in req.grants:
        grants.authorise(core, caller, replace(grant, principal=plan.uuid))
    return plan


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise Forbidden(f"permission denied: {what}")


def _plan(core: Core, caller: str, req: Enrolment) -> _Plan:
    cls = objects.require_class(core, req.klass)
    alike = core.reader().principals_named_alike(req.name)  # one read: consistent
    holder = next((uuid for uuid, name in alike if name == req.name), None)
    if holder is None and alike:
        raise Conflict(f"principal name {req.name!r} is taken by {alike[0][1]!r}: "
                       "names are unique regardless of case")
    if holder is not None and req.uuid is not None and holder != req.uuid:
        raise Conflict(f"name {req.name!r} belongs to another principal")
    uuid = req.uuid or holder
    existing = core.graph.get(uuid) if uuid else None
    prospect = None
    if existing is None:
        prospect = Prospect(cls.uuid, objects.default_owner(core, caller))
    elif not core.graph.is_member(existing.uuid, uuids.Class.Principal):
        if existing.rank != cls.rank - 1:
            raise Conflict("a member must be exactly one rank below its class")
        prospect = Prospect(cls.uuid, existing.owner)
    rank = existing.rank if existing is not None else cls.rank - 1
    for group in req.groups:
        found = core.graph.get(group)
        if found is None:
            raise NotFound(f"object {group} not found")
        if found.rank != rank + 1:
            raise Conflict(f"group {group} is not a class one rank above the principal")
    return _Plan(uuid or new_uuid(), cls, existing, holder is None, prospect, fresh=not uuid)


def _labelled_info(core: Core, schemas: SchemaCache, uuid: str, label: str | None, *,
                   fresh: bool = False) -> tuple[JsonObject, tuple[str, str] | None] | None:
    """The principal's Info entry with ``label`` as its name, validated, and the stored
    entry it replaces (none under a ``fresh`` uuid: not read); None without a label."""
    if label is None:
        return None
    stored = None if fresh else core.reader().get_config(uuids.App.Info, uuid)
    base = parse_json(stored[0]) if stored else {}
    if not isinstance(base, dict):
        raise Conflict("the principal's Info entry is not a JSON object")
    merged = {**base, "name": label}
    schemas.validate(uuids.App.Info, merged)
    return merged, stored


def _write(core: Core, tx: Tx, req: Enrolment, plan: _Plan, hashed: str | None,
           info: tuple[JsonObject, tuple[str, str] | None] | None, *, new_principal: bool) -> None:
    if plan.existing is None:
        assert plan.prospect is not None
        objects.create_in(tx, plan.cls, plan.uuid, plan.prospect.owner)
    elif plan.prospect is not None:
        tx.set_member(plan.cls.uuid, plan.uuid, True)
    if hashed is not None or new_principal:
        tx.w.put_principal(plan.uuid, req.name, hashed)
        audit.record(tx, "principal.create" if new_principal else "principal.password",
                     "principal", plan.uuid, target_name=req.name,
                     detail={"class": req.klass, "withPassword": hashed is not None}
                     if new_principal else {"generated": False})
    for group in req.groups:
        if not core.graph.has_direct_member(group, plan.uuid):
            tx.set_member(group, plan.uuid, True)
            audit.record(tx, "group.add", "principal", plan.uuid, target_name=req.name,
                         detail={"group": group})
    if info is not None:
        tx.put_config(uuids.App.Info, plan.uuid, *info)
    for grant in req.grants:
        uuid, created = grants.add_in(core, tx, replace(grant, principal=plan.uuid))
        if created:
            grants.record_added(tx, replace(grant, uuid=uuid, principal=plan.uuid))
