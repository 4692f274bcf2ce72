"""The Auth subset: principals with passwords, logins and tokens.

Password rotation with a grace period (an extension): a generated password may keep the one
it replaces valid as the *previous* password until a deadline, or until the new password
has been used once for a login, whichever comes first. Tokens and remembered logins are
tagged with the password hash they were obtained with and end when that password stops being
accepted: at once for a replaced password or a deleted principal, at the deadline or at the
retirement for a rotated-out one (token lifetime: :mod:`..core.credentials`).

Principal names are unique regardless of (ASCII) case: ``nobody`` and ``Nobody`` cannot both
be created. A database from before that rule may hold such pairs; they keep working, each by
its exact name.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from typing import NamedTuple

from ..common.errors import Conflict, NotFound, Unauthorized, Unprocessable
from ..core.credentials import (
    costly_check,
    generate_secret,
    hash_password,
    hash_tag,
    token_digest,
    verify_password,
)
from ..core.state import Core
from . import audit

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@/+-]{0,252}$")
MAX_PREVIOUS_VALID_S = 86400
"""The longest a rotated-out password may stay valid (one day)."""


class Login(NamedTuple):
    """A proved login: the principal and the tag of the password hash it matched."""

    principal: str
    tag: str


def login(core: Core, name: str, password: str,
          admit: Callable[[], None] | None = None) -> Login | None:
    """The login a name and password prove, or None.

    ``admit`` is called before a password is checked against an argon2 hash (not for a
    remembered login, nor for a generated secret's cheap hash): it raises to refuse the
    check (the server's admission control: a 503 before the expensive work).

    The current password retires a previous one still in its grace period the first time
    it is used (ending what the previous one obtained); the previous one is accepted until
    then (or until its deadline).
    """
    remembered = core.sessions.remembered_login(name, password)
    if remembered is not None:
        return Login(*remembered)
    found = core.reader().principal_login(name)
    if found is None:
        return None
    if admit is not None and costly_check(found.password_hash):
        admit()
    if verify_password(found.password_hash, password):
        current = hash_tag(found.password_hash)
        if found.previous_hash is not None:
            _retire_previous(core, found.uuid, found.previous_hash)
        core.sessions.remember_login(name, password, found.uuid, current)
        return Login(found.uuid, current)
    until = found.previous_until or 0.0
    if found.previous_hash is not None and until > time.time() and verify_password(
            found.previous_hash, password):
        previous = hash_tag(found.previous_hash)
        core.sessions.remember_login(name, password, found.uuid, previous, until)
        return Login(found.uuid, previous)
    return None


def _retire_previous(core: Core, uuid: str, previous_hash: str) -> None:
    """Drop a rotated-out password once its successor has been used (ending what it
    obtained: the transaction tells the sessions)."""
    with core.transaction() as tx:
        tx.w.retire_previous(uuid, previous_hash)


def issue_token(core: Core, proved: Login) -> tuple[str, int]:
    """A token for a login, and its expiry (ms since the epoch): it ends when the password
    the login proved stops being accepted, if sooner than its lifetime. 401 if that password
    was replaced since the login was checked."""
    found = core.reader().principal_credentials(proved.principal)
    if found is not None and hash_tag(found.password_hash) == proved.tag:
        return core.sessions.issue_token(proved.principal, proved.tag)
    until = found.previous_until if found is not None else None
    if (found is not None and found.previous_hash is not None and until is not None
            and hash_tag(found.previous_hash) == proved.tag and until > time.time()):
        return core.sessions.issue_token(proved.principal, proved.tag, until)
    raise Unauthorized("the password was changed meanwhile; log in again")


def end_token(core: Core, token: str) -> None:
    """End ``token`` now (a sign-out): every replica refuses it and closes the notify
    sessions it opened. An unknown or already ended token is not an error."""
    with core.transaction() as tx:
        tx.w.delete_token(token_digest(token))


def describe(core: Core, uuid: str) -> dict[str, str]:
    """``{uuid, name}`` of a principal (404 if it has no credentials)."""
    name = core.reader().principal_name(uuid)
    if name is None:
        raise NotFound(f"principal {uuid} not found")
    return {"uuid": uuid, "name": name}


def listing(core: Core) -> list[dict[str, str]]:
    """Every principal as ``{uuid, name}``."""
    return [{"uuid": u, "name": n} for u, n in sorted(core.reader().principals())]


def set_password(core: Core, uuid: str, password: str) -> None:
    """Replace a principal's password (ending its tokens and remembered logins)."""
    _store_hash(core, uuid, hash_password(password), {"generated": False})


def parse_rotation(body: object) -> float | None:
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
    working at once. With it, the password in use becomes the previous one, valid until the
    new deadline: the old current one, or, if that was never used (a previous one is still
    accepted), the previous one again, so rotations that nobody acted on (scripts fetched but
    never run) never cut off the running client. What any other password obtained ends now;
    what the kept one obtained (tokens, remembered logins) ends with it, at the deadline or
    at its retirement.
    """
    secret, hashed = generate_secret()
    if previous_valid_for is None:
        _store_hash(core, uuid, hashed, {"generated": True})
        return secret, None
    name = describe(core, uuid)["name"]
    now = time.time()
    until = now + previous_valid_for
    with core.transaction() as tx:
        tx.w.rotate_password(uuid, hashed, until, now)
        audit.record(tx, "principal.password", "principal", uuid, target_name=name,
                     detail={"generated": True, "previousValidFor": previous_valid_for})
    return secret, until


def _store_hash(core: Core, uuid: str, hashed: str, detail: Mapping[str, object]) -> None:
    name = describe(core, uuid)["name"]
    with core.transaction() as tx:
        tx.w.put_principal(uuid, name, hashed)
        audit.record(tx, "principal.password", "principal", uuid, target_name=name,
                     detail=detail)


def remove(core: Core, uuid: str) -> None:
    """Delete a principal's credentials, identities and the grants naming it (never the
    root's)."""
    if core.acl.is_root(uuid):
        raise Conflict("the root principal cannot be deleted")
    with core.transaction() as tx:
        name = tx.w.principal_name(uuid)
        if not tx.w.delete_principal(uuid):
            raise NotFound(f"principal {uuid} not found")
        tx.w.delete_identity(uuid)
        naming = [g.uuid for g in core.acl.find(principal=uuid)]
        tx.delete_grants(naming)
        audit.record(tx, "principal.delete", "principal", uuid, target_name=name,
                     detail={"grantsRemoved": len(naming)} if naming else None)
