"""A notify/v2 server for WATCH subscriptions of polled state, on :mod:`fplus.serving.websocket`.

The first message is ``Bearer <token>`` (ACS ``docs/services/notify-v2.md``), answered
``"200"``; or ``"400"`` (not that), ``"401"`` (a token proving nobody), ``"429"`` (its
principal holds ``max_connections`` connections already, through any of its tokens),
``"503"`` (it cannot be checked now), each followed by a close frame (1008; 1013 for 503).
Before that the request's own thread alone reads and writes; after it, :class:`WatchSession`
serves the subscriptions. A client going away is an ordinary end, logged at DEBUG.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .notify_auth import SocketSettings, read_bearer
from .principal_slots import PrincipalSlots
from .watch_session import POLICY, Response, Watch, WatchSession, describe
from .websocket import WebSocket

__all__ = ["PrincipalSlots", "Response", "Watch", "WatchService", "WatchSettings",
           "serve_watches"]

log = logging.getLogger(__name__)
TRY_AGAIN = 1013


@dataclass(frozen=True)
class WatchService:
    """What a service tells the server: who a token is, what its URLs answer, and when."""

    identify: Callable[[str], Any]
    """The principal a Bearer token proves (None: nobody); raises when it cannot tell."""
    resolve: Callable[[str], Watch | None]
    """The watch of a relative URL (``v1/status/``), None for a URL not served."""
    subscribe: Callable[[Callable[[], None]], Callable[[], None]]
    """``subscribe(listener)``: call ``listener`` (at once, never blocking) on every change;
    returns the unsubscribe function."""


@dataclass(frozen=True)
class WatchSettings(SocketSettings):
    """The server's limits and rhythms: the socket's, and the watches'."""

    max_subscriptions: int = 100
    """Live subscriptions on one connection; more are answered 429."""
    max_connections: int = 256
    """Authenticated connections of one principal (all its tokens); more are answered 429."""
    refresh: float = 1.0
    """Seconds between refreshes when no change is signalled."""
    recheck: float = 30.0
    """Seconds between checks that the token still proves its principal."""


def serve_watches(ws: WebSocket, service: WatchService, settings: WatchSettings,
                  slots: PrincipalSlots) -> None:
    """Serve one accepted WebSocket until it ends (run by
    :func:`fplus.serving.websocket_route.serve_websocket`); ``slots`` counts the connections of
    each principal."""
    found = _authenticate(ws, service, settings, slots)
    if found is None:
        return
    try:
        WatchSession(ws, service, settings, *found).run()
    finally:
        slots.give_back(_key(found[0]))


def _key(principal: Any) -> Any:
    """What identifies a principal across its tokens (a ``Caller``'s uuid)."""
    return getattr(principal, "uuid", principal)


def _authenticate(ws: WebSocket, service: WatchService, settings: WatchSettings,
                  slots: PrincipalSlots) -> tuple[Any, str] | None:
    """``(principal, token)`` from the first message, or None once answered and closed."""
    token = read_bearer(ws, settings.auth_message_bytes, settings.auth_timeout,
                        settings.send_timeout)
    if token is None:
        return None
    try:
        principal = service.identify(token)
    except Exception as exc:
        log.warning("notify: cannot check a token: %s", describe(exc))
        ws.send_text("503")
        ws.close(TRY_AGAIN, "notify: the token cannot be checked now")
        return None
    if principal is None:
        ws.send_text("401")
        ws.close(POLICY, "notify: unknown or expired token")
        return None
    if not slots.take(_key(principal)):
        ws.send_text("429")
        ws.close(POLICY, "notify: too many connections for this principal "
                         f"(max {slots.limit})")
        return None
    ws.send_text("200")
    return principal, token
