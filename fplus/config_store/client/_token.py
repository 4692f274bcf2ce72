"""A thread-safe cache for one Bearer token."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from fplus.jsontypes import JsonValue

REFRESH_MARGIN = 60.0
"""Seconds before its expiry at which a cached token is no longer handed out."""

DEFAULT_LIFETIME = 300.0
"""Assumed lifetime (seconds) when the token endpoint states no expiry."""


def parse_token_response(body: JsonValue, now: float) -> tuple[str, float]:
    """Extract ``(token, expiry as time.time() seconds)`` from a ``/token`` answer.

    Accepts ``{"token"|"access_token": ..., "expiry": ...}`` where ``expiry`` is an
    absolute time in milliseconds (as ACS sends it) or seconds, or ``"expires_in"``
    (relative seconds). A bare JSON string is taken as the token itself.
    """
    if isinstance(body, str) and body:
        return body, now + DEFAULT_LIFETIME
    if not isinstance(body, dict):
        raise ValueError("token response is not a JSON object")
    token = body.get("token") or body.get("access_token")
    if not isinstance(token, str) or not token:
        raise ValueError("token response carries no token")
    expiry = body.get("expiry")
    expires_in = body.get("expires_in")
    if isinstance(expiry, int | float) and not isinstance(expiry, bool):
        expires = expiry / 1000.0 if expiry > 1e11 else float(expiry)
    elif isinstance(expires_in, int | float) and not isinstance(expires_in, bool):
        expires = now + float(expires_in)
    else:
        expires = now + DEFAULT_LIFETIME
    return token, expires


class TokenCache:
    """Holds the current token; ``fetch`` returns ``(token, expiry)`` when a new one is due."""

    def __init__(self, fetch: Callable[[], tuple[str, float]]) -> None:
        self._fetch = fetch
        self._lock = threading.Lock()
        self._token: str | None = None
        self._refresh_at = 0.0

    def get(self) -> str:
        """The cached token, or a new one once within :data:`REFRESH_MARGIN` of its expiry.

        For tokens living less than twice the margin, refresh at half their lifetime.
        """
        with self._lock:
            now = time.time()
            if self._token is None or now >= self._refresh_at:
                token, expires = self._fetch()
                margin = min(REFRESH_MARGIN, max(expires - now, 0.0) / 2)
                self._token, self._refresh_at = token, expires - margin
            return self._token

    def invalidate(self, token: str | None = None) -> None:
        """Forget the cached token (only if it is still ``token``, when given)."""
        with self._lock:
            if token is None or token == self._token:
                self._token = None
                self._refresh_at = 0.0
