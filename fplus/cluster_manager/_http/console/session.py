"""Console sign-in: the session cookie, who it proves, and the CSRF token of its forms.

The cookie holds the user's name and a Config Store token (``HttpOnly``, ``SameSite=Strict``,
``Secure`` when the console is reached over HTTPS, path ``/ui/``). The CSRF token is an HMAC
of that token: a page of another site can neither read the cookie nor compute it. Every page
asks the Config Store afresh whether the token still holds, so a password change ends the
session at once; signing out ends the token itself (``DELETE /token``), so a copied cookie or
token is worth nothing afterwards.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar
from urllib.parse import quote

from flask import g, redirect, request, url_for
from werkzeug.wrappers import Response  # what redirect() answers; flask's is a subclass

from fplus.config_store import client as cs_client
from fplus.config_store.client import Caller, ConfigStoreClient, ConfigStoreError

from ...services.errors import Forbidden, Unauthorized, Unavailable
from ..context import services

COOKIE = "fplus_console"
PATH = "/ui/"
View = TypeVar("View", bound=Callable[..., Any])


@dataclass(frozen=True)
class ConsoleSession:
    """The signed-in user of this request."""

    user: str
    authorization: str
    caller: Caller
    csrf: str


def csrf_token(token: str) -> str:
    """The CSRF token of the forms of the session holding Config Store ``token``."""
    return hmac.new(token.encode(), b"fplus-console-csrf", hashlib.sha256).hexdigest()


def _encode(user: str, token: str) -> str:
    return base64.urlsafe_b64encode(user.encode()).decode().rstrip("=") + "." + token


def _decode(value: str) -> tuple[str, str] | None:
    head, sep, token = value.partition(".")
    if not sep or not token:
        return None
    try:
        user = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    return user, token


def log_in(user: str, password: str) -> str:
    """A Config Store token for ``user``; :class:`Unauthorized` if the Config Store refuses
    the credentials."""
    try:
        with ConfigStoreClient(services().cs.base_url, user, password, retries=1) as client:
            return client.token()
    except cs_client.Unauthorized:
        raise Unauthorized("wrong username or password") from None
    except ConfigStoreError as exc:
        raise Unavailable(f"the Config Store cannot be reached: {exc}") from None


def log_out(authorization: str) -> None:
    """End the session's Config Store token; :class:`Unavailable` if the Config Store
    cannot be reached (the session is then not ended, and the user is told so)."""
    try:
        services().access.end_token(authorization)
    except ConfigStoreError as exc:
        raise Unavailable(f"the Config Store cannot be reached, so the session was not "
                          f"ended: {exc}") from None


def _secure() -> bool:
    return request.is_secure or services().external_url.lower().startswith("https://")


def set_cookie(response: Response, user: str, token: str) -> Response:
    """Start the session on ``response``."""
    response.set_cookie(COOKIE, _encode(user, token), path=PATH, httponly=True,
                        samesite="Strict", secure=_secure())
    return response


def clear_cookie(response: Response) -> Response:
    """End the session on ``response``."""
    response.delete_cookie(COOKIE, path=PATH, httponly=True, samesite="Strict",
                           secure=_secure())
    return response


def _to_login(reason: str | None = None) -> Response:
    values: dict[str, Any] = {"next": request.full_path.rstrip("?")}
    if reason:
        values["reason"] = reason
    target = url_for("console.login", **values)
    return clear_cookie(redirect(target, 303))


def signed_in(view: View) -> View:
    """Run ``view`` with ``g.console`` set; to the sign-in page without a valid session.
    Every POST must carry the session's CSRF token (403 and nothing done otherwise)."""
    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        found = _decode(request.cookies.get(COOKIE, ""))
        if found is None:
            return _to_login()
        user, token = found
        authorization = f"Bearer {token}"
        who = services().access.principal(authorization, fresh=True)
        if who is None:
            return _to_login("expired")
        g.console = ConsoleSession(user, authorization, who, csrf_token(token))
        if request.method == "POST" and not hmac.compare_digest(
                request.form.get("csrf", ""), g.console.csrf):
            raise Forbidden("the form's CSRF token is missing or wrong: nothing was changed; "
                            "reload the page and try again")
        return view(*args, **kwargs)
    return wrapper  # type: ignore[return-value]


def same_origin_post() -> None:
    """Refuse a sign-in POST sent from another origin (the Origin header, when sent)."""
    origin = request.headers.get("Origin")
    if origin and origin.rstrip("/") != request.host_url.rstrip("/") and \
            origin.rstrip("/") != services().external_url.rstrip("/"):
        raise Forbidden("sign-in from another site is refused")


def next_path(value: str | None) -> str:
    """Where to go after sign-in: a path inside the console, never another site."""
    if value and value.startswith(PATH) and not value.startswith("//"):
        return quote(value, safe="/?=&-._~%")
    return PATH
