"""What the Git server's notify/v2 watch server is told: how a token is checked, what a URL
answers, when to look again, and its limits (:mod:`.server`, :mod:`.session`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fplus.serving.notify.bearer import SocketSettings

Response = dict[str, Any]
"""What a GET of a URL would answer now: ``{"status": 200, "body": …}``, ``{"status": 403}``."""
Watch = Callable[[Any], Response]
"""A subscription's response now, for the principal the token proves."""


@dataclass(frozen=True)
class WatchService:
    """What a service tells the server: who a token is, what its URLs answer, and when."""

    identify: Callable[[str], Any]
    """The principal a Bearer token proves (None: nobody); raises when it cannot tell."""
    resolve: Callable[[str], Watch | None]
    """The watch of a relative URL (``v1/status/``), None for a URL not served."""
    subscribe: Callable[[Callable[[], None]], Callable[[], None]]
    """``subscribe(listener)``: call ``listener`` (at once, never blocking) on every change;
    returns the unsubscribe function."""


@dataclass(frozen=True)
class WatchSettings(SocketSettings):
    """The server's limits and rhythms: the socket's, and the watches'."""

    max_subscriptions: int = 100
    """Live subscriptions on one connection; more are answered 429."""
    max_connections: int = 256
    """Authenticated connections of one principal (all its tokens); more are answered 429."""
    refresh: float = 1.0
    """Seconds between refreshes when no change is signalled."""
    recheck: float = 30.0
    """Seconds between checks that the token still proves its principal."""

