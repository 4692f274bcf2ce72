"""A notify/v2 server for WATCH subscriptions of polled state, on
:mod:`fplus.serving.http.websocket`.

The first message is ``Bearer <token>`` (ACS ``docs/services/notify-v2.md``), answered
``"200"``; or ``"400"`` (not that), ``"401"`` (a token proving nobody), ``"429"`` (its
principal holds ``max_connections`` connections already, through any of its tokens),
``"503"`` (it cannot be checked now), each followed by a close frame (1008; 1013 for 503).
Before that the request's own thread alone reads and writes; after it, :class:`WatchSession`
serves the subscriptions. A client going away is an ordinary end, logged at DEBUG.
"""

from __future__ import annotations

import logging
from typing import Any

from fplus.serving.http.websocket import WebSocket, describe
from fplus.serving.notify.bearer import accept, read_bearer, refuse_crowded, refuse_unknown
from fplus.serving.notify.wire import CANNOT_CHECK, TRY_AGAIN

from .principal_slots import PrincipalSlots
from .session import WatchSession
from .watches import WatchService, WatchSettings

log = logging.getLogger(__name__)


def serve_watches(ws: WebSocket, service: WatchService, settings: WatchSettings,
                  slots: PrincipalSlots) -> None:
    """Serve one accepted WebSocket until it ends (run by
    :func:`fplus.serving.http.websocket_route.serve_websocket`); ``slots`` counts the
    connections of each principal."""
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
        ws.send_text(CANNOT_CHECK)
        ws.close(TRY_AGAIN, "notify: the token cannot be checked now")
        return None
    if principal is None:
        refuse_unknown(ws)
        return None
    if not slots.take(_key(principal)):
        refuse_crowded(ws, slots.limit)
        return None
    accept(ws)
    return principal, token
