"""A notify/v2 server for WATCH subscriptions of polled state, on :mod:`serving.websocket`.

The first message is ``Bearer <token>`` (ACS ``docs/services/notify-v2.md``), answered
``"200"``; or ``"400"`` (not that), ``"401"`` (a token proving nobody), ``"503"`` (it cannot
be checked now), each followed by a close frame (1008; 1013 for 503). Before that the
request's own thread alone reads and writes; after it, :class:`WatchSession` serves the
subscriptions. A client going away is an ordinary end, logged at DEBUG.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .watch_session import GONE, POLICY, TOO_BIG, Response, Watch, WatchSession, describe
from .websocket import MessageTooBig, WebSocket

__all__ = ["Response", "Watch", "WatchService", "WatchSettings", "serve_watches"]

log = logging.getLogger(__name__)
TRY_AGAIN = 1013
_BEARER = re.compile(r"^Bearer ([A-Za-z0-9+/=]+)$")


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
class WatchSettings:
    """The server's limits and rhythms."""

    max_subscriptions: int = 100
    """Live subscriptions on one connection; more are answered 429."""
    refresh: float = 1.0
    """Seconds between refreshes when no change is signalled."""
    recheck: float = 30.0
    """Seconds between checks that the token still proves its principal."""
    auth_timeout: float = 10.0
    """Seconds from the upgrade to the ``Bearer`` message."""
    auth_message_bytes: int = 4096
    """Largest first message."""
    message_bytes: int = 64 * 1024
    """Largest request."""
    send_timeout: float = 30.0
    """Seconds a client may accept nothing of what is being written to it."""
    ping_interval: float = 25.0
    """Seconds between pings; a client silent for two intervals and more is dropped."""


def serve_watches(ws: WebSocket, service: WatchService, settings: WatchSettings) -> None:
    """Serve one accepted WebSocket until it ends; the socket is shut down after."""
    try:
        found = _authenticate(ws, service, settings)
        if found is not None:
            WatchSession(ws, service, settings, *found).run()
    except GONE as exc:
        log.debug("notify client went away: %s", describe(exc))
    except Exception:  # the socket is no longer HTTP: no error response can follow
        log.exception("notify session failed")
    finally:
        ws.shutdown()


def _authenticate(ws: WebSocket, service: WatchService,
                  settings: WatchSettings) -> tuple[Any, str] | None:
    """``(principal, token)`` from the first message, or None once answered and closed."""
    try:
        first = ws.receive(settings.auth_message_bytes, timeout=settings.auth_timeout)
    except MessageTooBig as exc:
        ws.close(TOO_BIG, f"notify: first message over {exc.limit} bytes")
        return None
    except TimeoutError:
        ws.close(POLICY, f"notify: no Bearer token within {settings.auth_timeout:g} s")
        return None
    ws.sock.settimeout(settings.send_timeout)
    if first is None:
        ws.close(1000, "")  # the echo of the client's close frame, if it sent one
        return None
    match = _BEARER.match(first) if isinstance(first, str) else None
    if match is None:
        ws.send_text("400")
        ws.close(POLICY, "notify: the first message must be 'Bearer <token>'")
        return None
    try:
        principal = service.identify(match[1])
    except Exception as exc:
        log.warning("notify: cannot check a token: %s", describe(exc))
        ws.send_text("503")
        ws.close(TRY_AGAIN, "notify: the token cannot be checked now")
        return None
    if principal is None:
        ws.send_text("401")
        ws.close(POLICY, "notify: unknown or expired token")
        return None
    ws.send_text("200")
    return principal, match[1]
