"""Request body limits that answer 413 cleanly and exactly (shared by every service's Flask app).

A body declared (``Content-Length``) over the limit is refused before it is read. A chunked
body declares nothing: it is read up to one byte past the limit, refused if that byte arrives,
and otherwise handed to the app as a sized body. Werkzeug alone would silently cut a chunked
body at the limit instead. A view decorated with :func:`body_limit` has a limit of its own
(an upload larger than the app's) instead of the app's ``MAX_CONTENT_LENGTH``.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import IO, TypeVar

from flask import current_app, request
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wsgi import get_content_length

V = TypeVar("V", bound=Callable[..., object])
_DRAIN_LIMIT = 64 * 1024 * 1024
_CHUNK = 64 * 1024


def body_limit(limit: int) -> Callable[[V], V]:
    """A view decorator: that view's requests may carry up to ``limit`` bytes."""
    def mark(view: V) -> V:
        view.body_limit = limit  # type: ignore[attr-defined]
        return view
    return mark


def refuse_oversized() -> None:
    """``before_request``: 413 for a body over ``MAX_CONTENT_LENGTH``, sized or chunked.

    The body is read and discarded first (up to 64 MiB), so the client sees the 413
    instead of a connection reset while it is still sending.
    """
    view = current_app.view_functions.get(request.endpoint or "")
    limit = getattr(view, "body_limit", None) or current_app.config["MAX_CONTENT_LENGTH"]
    request.max_content_length = limit
    environ = request.environ
    stream: IO[bytes] = environ["wsgi.input"]
    length = get_content_length(environ)  # None: chunked or no body
    if length is not None:
        if length > limit:
            _discard(stream, min(length, _DRAIN_LIMIT))
            raise _too_large(limit)
        return
    if "chunked" not in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
        return
    body = _read(stream, limit + 1)
    if len(body) > limit:
        _discard(stream, _DRAIN_LIMIT - len(body))
        raise _too_large(limit)
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    del environ["HTTP_TRANSFER_ENCODING"]


def _too_large(limit: int) -> RequestEntityTooLarge:
    return RequestEntityTooLarge(f"request body over {limit} bytes")


def _read(stream: IO[bytes], most: int) -> bytes:
    """Up to ``most`` bytes of ``stream`` (fewer at its end)."""
    parts: list[bytes] = []
    while most > 0:
        chunk = stream.read(min(_CHUNK, most))
        if not chunk:
            break
        parts.append(chunk)
        most -= len(chunk)
    return b"".join(parts)


def _discard(stream: IO[bytes], most: int) -> None:
    """Read and drop up to ``most`` bytes of ``stream``."""
    while most > 0:
        chunk = stream.read(min(_CHUNK, most))
        if not chunk:
            break
        most -= len(chunk)
