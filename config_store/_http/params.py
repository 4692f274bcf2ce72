"""Request parsing: UUID path segments (410 when malformed) and JSON bodies."""

from __future__ import annotations

import json
from typing import Any

from flask import request
from werkzeug.exceptions import Gone
from werkzeug.routing import BaseConverter

from .._domain.errors import BadRequest, UnsupportedMediaType
from ..uuids import is_uuid


class UUIDConverter(BaseConverter):
    """``<uuid:x>``: matches any segment; a malformed UUID answers 410 (as ACS)."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        if not is_uuid(value):
            raise Gone(f"malformed UUID {value!r}")
        return value


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
