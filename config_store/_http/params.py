"""Request parsing: UUID path segments (410 when malformed) and JSON bodies."""

from __future__ import annotations

import json
from typing import Any

from flask import current_app, request
from werkzeug.exceptions import Gone, RequestEntityTooLarge
from werkzeug.routing import BaseConverter

from .._domain.errors import BadRequest, UnsupportedMediaType
from .._domain.ids import is_uuid


class UUIDConverter(BaseConverter):
    """``<uuid:x>``: matches any segment; a malformed UUID answers 410 (as ACS)."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        if not is_uuid(value):
            raise Gone(f"malformed UUID {value!r}")
        return value


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


def json_body(*, merge_patch: bool = False) -> Any:
    """The request's JSON body: 415 for the wrong content type, 400 if unparsable."""
    mimetype = request.mimetype or ""
    if merge_patch:
        if mimetype != "application/merge-patch+json":
            raise UnsupportedMediaType("PATCH needs Content-Type: application/merge-patch+json")
    elif mimetype != "application/json" and not mimetype.endswith("+json"):
        raise UnsupportedMediaType("body must be Content-Type: application/json")
    raw = request.get_data(cache=False)
    try:
        return json.loads(raw)
    except ValueError:
        raise BadRequest("request body is not valid JSON") from None
