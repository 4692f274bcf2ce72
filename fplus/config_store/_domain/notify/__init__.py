"""notify/v2 subscriptions and their limits, independent of the WebSocket transport."""

from __future__ import annotations

from .limits import CredentialsEnded, FellBehind, NotifyLimits, SessionEnded, SessionError
from .outbox import Outbox
from .registry import NotifyRegistry
from .session import NotifySession
from .subscriptions import filter_matches

__all__ = ["CredentialsEnded", "FellBehind", "NotifyLimits", "NotifyRegistry", "NotifySession",
           "Outbox", "SessionEnded", "SessionError", "filter_matches"]
