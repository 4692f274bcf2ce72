"""What one notify/v2 session may cost, and how a session ends when it asks for more."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NotifyLimits:
    """Per-session and per-principal bounds of notify/v2 (each one a setting)."""

    queue_bytes: int = 8 * 1024 * 1024
    """Bytes of updates waiting for a slow client; one update alone may be bigger."""
    queue_events: int = 10_000
    """Updates waiting for a client (and, apart, committed writes not yet turned into
    updates for it)."""
    max_subscriptions: int = 1000
    """Live subscriptions on one connection; more are answered 429."""
    max_connections: int = 256
    """Authenticated notify connections of one principal; more are answered 429."""
    max_principal_subscriptions: int = 10_000
    """Live subscriptions of one principal over all its connections (and tokens); more are
    answered 429."""
    pending_requests: int = 100
    """Client requests read but not yet handled; reading pauses beyond (TCP back-pressure)."""


class SessionEnded(Exception):
    """The session must end; ``str(exc)`` is the reason given to the client."""


class SessionError(SessionEnded):
    """The client broke the protocol."""


class FellBehind(SessionEnded):
    """The client does not read its updates as fast as they come."""


class CredentialsEnded(SessionEnded):
    """The token the session was opened with was revoked or expired."""
