"""Request body limits that answer 413 cleanly (shared by every service's Flask app)."""

from __future__ import annotations

from flask import current_app, request
from werkzeug.exceptions import RequestEntityTooLarge

_DRAIN_LIMIT = 64 * 1024 * 1024


def refuse_oversized() -> None:
    """``before_request``: 413 for a declared body over the limit.

    The body is read and discarded first (up to 64 MiB), so the client sees the 413
    instead of a connection reset while it is still sending.
    """
    limit = current_app.config["MAX_CONTENT_LENGTH"]
    length = request.content_length
    if length is None or length <= limit:
        return
    stream = request.environ["wsgi.input"]
    remaining = min(length, _DRAIN_LIMIT)
    while remaining > 0:
        chunk = stream.read(min(65536, remaining))
        if not chunk:
            break
        remaining -= len(chunk)
    raise RequestEntityTooLarge(f"request body over {limit} bytes")
