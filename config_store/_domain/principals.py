"""The Auth subset: principals with passwords, logins, and grants.

Password rotation with a grace period (an extension): a generated password may keep the one
it replaces valid as the *previous* password until a deadline, or until the new password
has been used once for a login, whichever comes first; the principal's tokens stay valid.
"""

from __future__ import annotations

import math
import re
import time
from typing import Any

from .. import uuids
from .._storage import GrantRow
from ..uuids import is_uuid
from . import objects
from .core import Core, new_uuid
from .credentials import generate_secret, hash_password, hash_tag, verify_password
from .errors import Conflict, NotFound, Unprocessable

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@/+-]{0,252}$")
MAX_PREVIOUS_VALID_S = 86400
"""The longest a rotated-out password may stay valid (one day)."""


def login(core: Core, name: str, password: str) -> str | None:
    """The principal for a name and password, or None.

    The current password retires a previous one still in its grace period the first time
    it is used; the previous one is accepted until then (or until its deadline).
    """
    remembered = core.sessions.remembered_login(name, password)
    if remembered is not None:
        return remembered
    found = core.storage.reader().principal_login(name)
    if found is None:
        return None
    if verify_password(found.password_hash, password):
        if found.previous_hash is not None:
            _retire_previous(core, found.uuid, found.previous_hash)
            core.sessions.forget_logins(found.uuid, keep=hash_tag(found.password_hash))
        core.sessions.remember_login(name, password, found.uuid, hash_tag(found.password_hash))
        return found.uuid
    until = found.previous_until or 0.0
    if found.previous_hash is not None and until > time.time() and verify_password(
            found.previous_hash, password):
        core.sessions.remember_login(name, password, found.uuid, hash_tag(found.previous_hash),
                                     until)
        return found.uuid
    return None


def _retire_previous(core: Core, uuid: str, previous_hash: str) -> None:
    """Drop a rotated-out password once its successor has been used."""
    with core.transaction() as tx:
        tx.w.retire_previous(uuid, previous_hash)


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
        raise Unprocessable("uuid must be a UUID")
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


def parse_rotation(body: Any) -> float | None:
    """Validate the optional body of a password generation, ``{"previousValidFor": s}``;
    returns the grace period in seconds, or None for an immediate replacement (``{}``)."""
    if not isinstance(body, dict):
        raise Unprocessable('body must be a JSON object {"previousValidFor"?: seconds}')
    extra = set(body) - {"previousValidFor"}
    if extra:
        raise Unprocessable(f"unknown fields: {sorted(extra)}; only previousValidFor is known")
    seconds = body.get("previousValidFor")
    if seconds is None and "previousValidFor" not in body:
        return None
    if (isinstance(seconds, bool) or not isinstance(seconds, int | float)
            or not math.isfinite(seconds) or not 0 <= seconds <= MAX_PREVIOUS_VALID_S):
        raise Unprocessable(
            f"previousValidFor must be a number of seconds from 0 to {MAX_PREVIOUS_VALID_S}")
    return float(seconds)


def generate_password(core: Core, uuid: str,
                      previous_valid_for: float | None = None) -> tuple[str, float | None]:
    """Replace a principal's password with a generated secret, returned once with the time
    (epoch seconds) until which the replaced password stays valid, if it does.

    Without ``previous_valid_for`` the old password, remembered logins and tokens stop
    working at once. With it, the old password becomes the previous one (dropping an older
    previous one) and the principal's tokens stay valid.
    """
    secret, hashed = generate_secret()
    if previous_valid_for is None:
        _store_hash(core, uuid, hashed)
        return secret, None
    describe(core, uuid)
    until = time.time() + previous_valid_for
    with core.transaction() as tx:
        replaced = tx.w.rotate_password(uuid, hashed, until)
    core.sessions.forget_logins(uuid, keep=hash_tag(replaced), until=until)
    return secret, until


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
