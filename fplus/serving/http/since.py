"""The ``since`` query parameter of the audit routes: an ISO 8601 time as epoch seconds."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime


def parse_since(value: str | None, refused: Callable[[str], Exception]) -> float | None:
    """``value`` as seconds since the epoch (a naive time means UTC); None for None.
    ``refused(message)`` is raised (the caller's 400) if it is no ISO 8601 time."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise refused("since must be an ISO 8601 time, e.g. 2026-01-31T12:00:00Z") from None
    return (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp()
