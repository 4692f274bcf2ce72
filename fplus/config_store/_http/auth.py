"""Request authentication (Basic, Bearer) and ACL checks for routes."""

from __future__ import annotations

import base64
import binascii
import re

from flask import current_app, g, request

from .._domain.auth import principals
from .._domain.common.errors import Forbidden, Unauthorized
from .._domain.store import Store
from .gate import gate_password_check

_SCHEME = re.compile(r"^([A-Za-z]+) +([A-Za-z0-9._~+/=-]+)$")
PUBLIC = frozenset({"misc.ping", "misc.openapi", "metrics", "notify.notify",
                    "notify.not_upgraded"})

# What a 401 says (the status and the WWW-Authenticate challenge are always the same).
NO_CREDENTIALS = ("credentials required: HTTP Basic (name and password) or a Bearer token "
                  "from POST /token")
REFUSED_LOGIN = "wrong username or password"
REFUSED_BEARER = "unknown or expired token; log in again"
BAD_HEADER = "malformed Authorization header: use HTTP Basic or a Bearer token"


def store() -> Store:
    """The app's open store."""
    return current_app.extensions["config_store"]


def _authorize(header: str | None) -> tuple[str, principals.Login | None]:
    """The principal an ``Authorization`` header proves, with the password login when it was
    Basic (None for a Bearer token); 401 saying what is wrong if none."""
    if not header:
        raise Unauthorized(NO_CREDENTIALS)
    match = _SCHEME.match(header)
    if not match:
        raise Unauthorized(BAD_HEADER)
    scheme, cred = match[1].lower(), match[2]
    core = store().core
    if scheme == "bearer":
        found = core.sessions.token_principal(cred)
        if found is None:
            raise Unauthorized(REFUSED_BEARER)
        return found, None
    if scheme != "basic":
        raise Unauthorized(f"unsupported Authorization scheme {match[1]!r}: "
                           "use HTTP Basic or a Bearer token")
    try:
        name, sep, password = base64.b64decode(cred, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise Unauthorized(BAD_HEADER) from None
    if not sep:
        raise Unauthorized(BAD_HEADER)
    proved = principals.login(core, name, password, admit=gate_password_check)
    if proved is None:
        raise Unauthorized(REFUSED_LOGIN)
    return proved.principal, proved


def authenticate() -> None:
    """``before_request``: set ``g.principal`` (and ``g.login`` for a password login); 401
    unless the route is public.

    An ``Authorization`` header, when sent, must prove a principal even on public routes.
    """
    header = request.headers.get("Authorization")
    g.principal, g.login = None, None
    if header or request.endpoint not in PUBLIC:
        g.principal, g.login = _authorize(header)


def caller() -> str:
    """The authenticated principal."""
    return g.principal


def bearer_token() -> str | None:
    """The Bearer token the request was authenticated with (None for Basic)."""
    if g.principal is None or g.login is not None:
        return None
    match = _SCHEME.match(request.headers.get("Authorization", ""))
    return match[2] if match and match[1].lower() == "bearer" else None


def login() -> principals.Login | None:
    """The password login the request proved, or None (a Bearer token, or no credentials)."""
    return g.login


def allowed(perm: str, target: str, *, wild: bool = True, obj: str | None = None) -> bool:
    """Does the caller hold ``perm`` on ``target``?"""
    return store().core.acl.check(g.principal, perm, target, wild=wild, obj=obj)


def require(perm: str, target: str, *, wild: bool = True, obj: str | None = None) -> None:
    """403 unless the caller holds ``perm`` on ``target``."""
    if not allowed(perm, target, wild=wild, obj=obj):
        raise Forbidden("permission denied")
