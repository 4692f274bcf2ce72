"""The Auth subset: principals with passwords, logins, and grants."""

from __future__ import annotations

import re
from typing import Any

from .. import uuids
from .._storage import GrantRow
from ..uuids import is_uuid
from . import objects
from .core import Core, new_uuid
from .credentials import generate_secret, hash_password, verify_password
from .errors import Conflict, NotFound, Unprocessable

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@/+-]{0,252}$")


def login(core: Core, name: str, password: str) -> str | None:
    """The principal for a name and password, or None."""
    remembered = core.sessions.remembered_login(name, password)
    if remembered is not None:
        return remembered
    found = core.storage.reader().principal_by_name(name)
    if found is None or not verify_password(found[1], password):
        return None
    core.sessions.remember_login(name, password, found[0])
    return found[0]


def find(core: Core, name: str) -> str | None:
    """A principal's uuid by name (a ``@REALM`` suffix is ignored when no exact match)."""
    reader = core.storage.reader()
    found = reader.principal_by_name(name) or (
        reader.principal_by_name(name.split("@", 1)[0]) if "@" in name else None)
    return found[0] if found else None


def describe(core: Core, uuid: str) -> dict[str, str]:
    """``{uuid, name}`` of a principal (404 if it has no credentials)."""
    name = core.storage.reader().principal_name(uuid)
    if name is None:
        raise NotFound(f"principal {uuid} not found")
    return {"uuid": uuid, "name": name}


def listing(core: Core) -> list[dict[str, str]]:
    """Every principal as ``{uuid, name}``."""
    return [{"uuid": u, "name": n} for u, n in sorted(core.storage.reader().principals())]


def create(core: Core, caller: str, name: str, password: str | None = None,
           uuid: str | None = None, klass: str = uuids.Class.Principal) -> tuple[str, bool]:
    """Create (or re-password) a principal; returns ``(uuid, created)``."""
    if not NAME.match(name):
        raise Unprocessable("principal name must be 1-253 of [A-Za-z0-9._@/+-]")
    if uuid is not None and not is_uuid(uuid):
        raise Unprocessable("uuid must be a lower-case UUID")
    holder = find_exact(core, name)
    if holder is not None and uuid is not None and holder != uuid:
        raise Conflict(f"name {name!r} belongs to another principal")
    uuid = uuid or holder
    existing = core.graph.get(uuid) if uuid else None
    if existing is None:
        uuid = objects.create(core, caller, klass, uuid)[0].uuid
    elif not core.graph.is_member(uuid, uuids.Class.Principal):
        objects.set_member(core, klass, uuid, True)
    assert uuid is not None
    hashed = hash_password(password) if password is not None else None
    with core.transaction() as tx:
        previous = tx.w.principal_name(uuid)
        if previous is not None and previous != name:
            raise Conflict("principal exists with another name")
        if hashed is None and previous is not None:
            return uuid, False
        tx.w.put_principal(uuid, name, hashed)
    core.sessions.forget_principal(uuid)
    return uuid, holder is None


def find_exact(core: Core, name: str) -> str | None:
    """A principal's uuid by exact name."""
    found = core.storage.reader().principal_by_name(name)
    return found[0] if found else None


def set_password(core: Core, uuid: str, password: str) -> None:
    """Replace a principal's password (forgets its sessions)."""
    _store_hash(core, uuid, hash_password(password))


def generate_password(core: Core, uuid: str) -> str:
    """Replace a principal's password with a generated secret, returned once."""
    secret, hashed = generate_secret()
    _store_hash(core, uuid, hashed)
    return secret


def _store_hash(core: Core, uuid: str, hashed: str) -> None:
    name = describe(core, uuid)["name"]
    with core.transaction() as tx:
        tx.w.put_principal(uuid, name, hashed)
    core.sessions.forget_principal(uuid)


def remove(core: Core, uuid: str) -> None:
    """Delete a principal's credentials and the grants naming it (never the root's)."""
    if core.acl.is_root(uuid):
        raise Conflict("the root principal cannot be deleted")
    with core.transaction() as tx:
        if not tx.w.delete_principal(uuid):
            raise NotFound(f"principal {uuid} not found")
        tx.delete_grants([g.uuid for g in core.acl.find(principal=uuid)])
    core.sessions.forget_principal(uuid)


# -- grants ---------------------------------------------------------------------------
_GRANT_FIELDS = ("principal", "permission", "target")


def parse_grant(body: Any) -> GrantRow:
    """Validate a grant body ``{principal, permission, target, plural?, object?}``."""
    if not isinstance(body, dict):
        raise Unprocessable("grant must be a JSON object")
    extra = set(body) - {*_GRANT_FIELDS, "plural", "object", "uuid"}
    if extra:
        raise Unprocessable(f"unknown grant fields: {sorted(extra)}")
    for field in _GRANT_FIELDS:
        if not is_uuid(body.get(field)):
            raise Unprocessable(f"grant {field} must be a UUID")
    obj = body.get("object")
    if obj is not None and not is_uuid(obj):
        raise Unprocessable("grant object must be a UUID or null")
    if not isinstance(body.get("plural", False), bool):
        raise Unprocessable("grant plural must be a boolean")
    return GrantRow("", body["principal"], body["permission"], body["target"],
                    body.get("plural", False), obj)


def parse_grant_pattern(body: Any) -> dict[str, Any]:
    """Validate a ``grant/find`` pattern; absent or null fields match anything."""
    if not isinstance(body, dict):
        raise Unprocessable("pattern must be a JSON object")
    extra = set(body) - {*_GRANT_FIELDS, "plural", "object"}
    if extra:
        raise Unprocessable(f"unknown pattern fields: {sorted(extra)}")
    for field in (*_GRANT_FIELDS, "object"):
        if body.get(field) is not None and not is_uuid(body[field]):
            raise Unprocessable(f"pattern {field} must be a UUID or null")
    if body.get("plural") is not None and not isinstance(body["plural"], bool):
        raise Unprocessable("pattern plural must be a boolean or null")
    return {"principal": body.get("principal"), "permission": body.get("permission"),
            "target": body.get("target"), "plural": body.get("plural"),
            "obj": body.get("object")}


def add_grant(core: Core, grant: GrantRow) -> tuple[str, bool]:
    """Store a grant unless an identical one exists; returns ``(uuid, created)``."""
    with core.transaction() as tx:
        same = core.acl.find(grant.principal, grant.permission, grant.target, grant.plural,
                             grant.object)
        same = [g for g in same if g.object == grant.object]
        if same:
            return same[0].uuid, False
        row = GrantRow(new_uuid(), grant.principal, grant.permission, grant.target,
                       grant.plural, grant.object)
        tx.put_grant(row)
        return row.uuid, True


def grant_json(grant: GrantRow) -> dict[str, Any]:
    """A grant as returned by the API."""
    out: dict[str, Any] = {"uuid": grant.uuid, "principal": grant.principal,
                           "permission": grant.permission, "target": grant.target,
                           "plural": grant.plural}
    if grant.object is not None:
        out["object"] = grant.object
    return out


def get_grant(core: Core, uuid: str) -> GrantRow:
    """A grant by uuid (404 if unknown)."""
    grant = core.acl.grants.get(uuid)
    if grant is None:
        raise NotFound(f"grant {uuid} not found")
    return grant


def delete_grant(core: Core, uuid: str) -> None:
    """Delete a grant (404 if unknown)."""
    get_grant(core, uuid)
    with core.transaction() as tx:
        tx.delete_grants([uuid])
