"""Who calls, and what they may do: one ``@authenticated`` decorator and checks that raise."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from flask import g, request
from werkzeug.exceptions import Forbidden, Unauthorized

from fplus.config_store.client import Caller

from .context import server

P = ParamSpec("P")
R = TypeVar("R")


def authenticated(view: Callable[P, R]) -> Callable[P, R]:
    """Decorate a view: 401 (with the Basic challenge) unless the ``Authorization`` header
    proves a principal; the view then finds it as :func:`caller`."""

    @functools.wraps(view)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        found = server().access.principal(request.headers.get("Authorization"))
        if found is None:
            raise Unauthorized("authentication required")
        g.caller = found
        return view(*args, **kwargs)

    return wrapper


def caller() -> Caller:
    """The principal :func:`authenticated` resolved for this request."""
    return g.caller


def require(permission: str, target: str, *, wild: bool = True,
            message: str = "permission denied") -> None:
    """403 unless the caller holds ``permission`` on ``target`` (or, with ``wild``, on the
    wildcard)."""
    if not server().access.allowed(caller(), permission, target, wild=wild):
        raise Forbidden(message)
