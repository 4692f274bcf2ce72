"""The one base of every service's refusals that carry the HTTP status to answer with.

A service's domain raises subclasses of :class:`HttpError`; its HTTP layer answers them as
``{"error": message}`` (or ``body``). Imports nothing (no Flask), so a domain kept free of
the web framework may raise them.
"""

from __future__ import annotations

from typing import Any


class HttpError(Exception):
    """A refused request: ``status`` is the HTTP status, ``message`` safe to show (never a
    secret), ``body`` an optional JSON body, ``retry_after`` seconds for a Retry-After."""

    status = 500

    def __init__(self, message: str = "", body: Any = None, *,
                 retry_after: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.body = body
        self.retry_after = retry_after
