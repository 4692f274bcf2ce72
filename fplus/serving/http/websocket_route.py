"""A Flask WebSocket route around the socket: 426 to a plain GET, the handshake, the end of
the session, and the response that tells gunicorn the socket is finished."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NoReturn

from flask import Response, jsonify, request

from .websocket import GONE, HandshakeFailed, WebSocket, describe

log = logging.getLogger(__name__)


def not_upgraded() -> tuple[Response, int]:
    """A plain GET of a WebSocket-only endpoint: 426."""
    return jsonify({"error": "notify/v2 is a WebSocket endpoint"}), 426


class WebSocketDone(Response):
    """What the route returns once the WebSocket is over: gunicorn writes nothing more and
    closes the connection (the same signal flask-sock gives it)."""

    def __call__(self, environ: Any, start_response: Any) -> NoReturn:
        raise StopIteration


def serve_websocket(run: Callable[[WebSocket], None]) -> Response | tuple[Response, int]:
    """Accept the request's WebSocket (400 for a bad handshake) and ``run`` it to its end: a
    client going away is logged at DEBUG, anything else as an error, never as a response
    (the socket is no longer HTTP); the socket is shut down after."""
    try:
        ws = WebSocket.accept(request.environ, list(request.headers.items()), request.path)
    except HandshakeFailed as exc:
        return jsonify({"error": f"notify/v2: {exc}"}), 400
    try:
        run(ws)
    except GONE as exc:
        log.debug("notify client went away: %s", describe(exc))
    except Exception:
        log.exception("notify session failed")
    finally:
        ws.shutdown()
    return WebSocketDone()
