"""What a Flask WebSocket route answers around the socket: 426 to a plain GET, and the
response that tells gunicorn the socket is finished."""

from __future__ import annotations

from flask import Response, jsonify


def not_upgraded() -> tuple[Response, int]:
    """A plain GET of a WebSocket-only endpoint: 426."""
    return jsonify({"error": "notify/v2 is a WebSocket endpoint"}), 426


class WebSocketDone(Response):
    """What the route returns once the WebSocket is over: gunicorn writes nothing more and
    closes the connection (the same signal flask-sock gives it)."""

    def __call__(self, environ, start_response):  # type: ignore[no-untyped-def, override]
        raise StopIteration
