"""ETag conditions (RFC 7232 subset as ACS implements it)."""

from __future__ import annotations

import re

from .errors import BadRequest, PreconditionFailed

_TAG = re.compile(r'^(W/)?"([^"]*)"$')
_SPLIT = re.compile(r" *, *")


class NotModified(PreconditionFailed):
    """``If-None-Match`` failed: 412 on writes, 304 on reads."""


def _parse(header: str) -> list[tuple[bool, str]] | None:
    """Parse a tag list into ``(weak, value)`` pairs; None for ``*``; 400 if malformed."""
    if header.strip() == "*":
        return None
    tags = []
    for part in _SPLIT.split(header.strip()):
        match = _TAG.match(part)
        if not match:
            raise BadRequest(f"malformed entity tag: {part!r}")
        tags.append((bool(match.group(1)), match.group(2)))
    return tags


def check(if_match: str | None, if_none_match: str | None, etag: str | None) -> None:
    """Raise :class:`PreconditionFailed` unless the conditions hold for ``etag``.

    ``etag`` is the current entry's tag, or None when the entry is absent.
    ``If-Match`` needs a strong match; ``If-None-Match`` fails on a weak match.
    """
    if if_match is not None:
        tags = _parse(if_match)
        if etag is None or (tags is not None and not any(
            not weak and value == etag for weak, value in tags
        )):
            raise PreconditionFailed("If-Match failed")
    if if_none_match is not None:
        tags = _parse(if_none_match)
        if etag is not None and (tags is None or any(value == etag for _, value in tags)):
            raise NotModified("If-None-Match failed")


def quote(etag: str) -> str:
    """Format an etag for the ``ETag`` header."""
    return f'"{etag}"'
