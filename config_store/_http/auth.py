"""Request authentication (Basic, Bearer) and ACL checks for routes."""

from __future__ import annotations

import base64
import binascii
import re

from flask import current_app, g, request

from .._domain import principals
from .._domain.errors import Forbidden, Unauthorized
from .._domain.store import Store

_SCHEME = re.compile(r"^([A-Za-z]+) +([A-Za-z0-9._~+/=-]+)$")
PUBLIC = frozenset({"misc.ping", "misc.openapi", "notify.notify", "notify.not_upgraded"})


def store() -> Store:
    """The app's open store."""
    return current_app.extensions["config_store"]


def principal_from_header(header: str | None) -> str | None:
    """The principal an ``Authorization`` header proves, or None."""
    if not header:
        return None
    match = _SCHEME.match(header)
    if not match:
        return None
    scheme, cred = match[1].lower(), match[2]
    core = store().core
    if scheme == "bearer":
        return core.sessions.token_principal(cred)
    if scheme == "basic":
        try:
            name, _, password = base64.b64decode(cred, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return principals.login(core, name, password)
    return None


def authenticate() -> None:
    """``before_request``: set ``g.principal``; 401 unless the route is public."""
    header = request.headers.get("Authorization")
    g.principal = principal_from_header(header)
    if g.principal is None and (header or request.endpoint not in PUBLIC):
        raise Unauthorized("authentication required")


def caller() -> str:
    """The authenticated principal."""
    return g.principal


def allowed(perm: str, target: str, *, wild: bool = True, obj: str | None = None) -> bool:
    """Does the caller hold ``perm`` on ``target``?"""
    return store().core.acl.check(g.principal, perm, target, wild=wild, obj=obj)


def require(perm: str, target: str, *, wild: bool = True, obj: str | None = None) -> None:
    """403 unless the caller holds ``perm`` on ``target``."""
    if not allowed(perm, target, wild=wild, obj=obj):
        raise Forbidden("permission denied")
