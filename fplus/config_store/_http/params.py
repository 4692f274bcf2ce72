"""Request parsing: UUID path segments (410 when malformed) and JSON bodies.

UUIDs are accepted in any case, in path segments and in the UUID fields of bodies, and
lower-cased here, before anything checks or stores them: the domain sees only the
lower-case form :func:`fplus.config_store.uuids.is_uuid` accepts.
"""

from __future__ import annotations

from collections.abc import Iterable

from flask import request
from werkzeug.exceptions import Gone
from werkzeug.routing import BaseConverter

from fplus.jsontypes import JsonValue
from fplus.serving import JSONRejected, loads_checked

from .._domain.common.errors import BadRequest, UnsupportedMediaType
from ..uuids import is_uuid


def lower_uuid(value: JsonValue) -> JsonValue:
    """``value`` lower-cased if it is a UUID in any case; anything else unchanged."""
    return lower_uuid_text(value) if isinstance(value, str) else value


def lower_uuid_text(value: str) -> str:
    """:func:`lower_uuid` of a string (a dict key, a path segment)."""
    return value.lower() if value.isascii() and is_uuid(value.lower()) else value


def lower_uuid_fields(body: JsonValue, fields: Iterable[str]) -> JsonValue:
    """A copy of a JSON object with the UUIDs in ``fields`` (or lists of them) lower-cased;
    anything but an object is returned as it is."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    for field in fields:
        value = out.get(field)
        if isinstance(value, list):
            out[field] = [lower_uuid(v) for v in value]
        elif field in out:
            out[field] = lower_uuid(value)
    return out


class UUIDConverter(BaseConverter):
    """``<uuid:x>``: matches any segment; a UUID in any case is lower-cased, anything else
    answers 410 (as ACS)."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        lowered = lower_uuid_text(value)
        if not is_uuid(lowered):
            raise Gone(f"malformed UUID {value!r}")
        return lowered


PARSED_BODY = "fplus.parsed_body"
"""The WSGI environ key of a body already parsed and checked (a ``/v2/batch`` operation's,
checked as :func:`serving.loads_checked` checks a single request's): :func:`json_body`
answers it instead of parsing the bytes again."""


def has_body() -> bool:
    """Does the request carry a (non-empty) body?"""
    return bool(request.get_data(cache=True))


def json_body(*, merge_patch: bool = False) -> JsonValue:
    """The request's JSON body: 415 for the wrong content type, 400 (with the reason) if it
    is not UTF-8 JSON, nests too deeply or holds an invalid string
    (:func:`serving.loads_checked`)."""
    mimetype = request.mimetype or ""
    if merge_patch:
        if mimetype != "application/merge-patch+json":
            raise UnsupportedMediaType("PATCH needs Content-Type: application/merge-patch+json")
    elif mimetype != "application/json" and not mimetype.endswith("+json"):
        raise UnsupportedMediaType("body must be Content-Type: application/json")
    if PARSED_BODY in request.environ:  # a batch operation's, checked with the batch
        checked: JsonValue = request.environ[PARSED_BODY]
        return checked
    raw = request.get_data(cache=False)
    try:
        parsed: JsonValue = loads_checked(raw)
        return parsed
    except JSONRejected as exc:
        raise BadRequest(f"request body refused: {exc}") from None


DETAIL_VALUES = ("1", "true", "yes")


def detailed() -> bool:
    """Did the caller opt in to our richer answer shape (``?detail=true``) where the default
    is upstream's?"""
    return request.args.get("detail", "").lower() in DETAIL_VALUES
