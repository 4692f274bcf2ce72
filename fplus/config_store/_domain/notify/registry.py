"""The open notify sessions: caps per principal, and revocations passed on to sessions."""

from __future__ import annotations

import threading

from ..core.credentials import Sessions
from .session import NotifySession


class NotifyRegistry:
    """Every authenticated notify session of one store, by principal.

    Subscribes once to the store's token revocations and tells each session of the revoked
    principal to re-check its token (it ends then, or when that token stops being valid).
    """

    def __init__(self, sessions: Sessions, max_connections: int) -> None:
        self.max_connections = max_connections
        self._lock = threading.Lock()
        self._by_principal: dict[str, set[NotifySession]] = {}
        sessions.subscribe_revocations(self._revoked)

    def admit(self, session: NotifySession) -> bool:
        """Register ``session``; False (and not registered) if its principal has the most
        sessions allowed already."""
        with self._lock:
            mine = self._by_principal.setdefault(session.principal, set())
            if len(mine) >= self.max_connections:
                if not mine:
                    del self._by_principal[session.principal]
                return False
            mine.add(session)
            return True

    def subscriptions(self, principal: str) -> int:
        """Live subscriptions of ``principal`` over all its sessions."""
        with self._lock:
            mine = list(self._by_principal.get(principal, ()))
        return sum(len(session.subs) for session in mine)

    def queues(self) -> list[tuple[int, int]]:
        """``(updates, bytes)`` waiting in each open session's outbox (for metrics)."""
        with self._lock:
            sessions = [session for mine in self._by_principal.values() for session in mine]
        return [session.outbox.depth() for session in sessions]

    def leave(self, session: NotifySession) -> None:
        """Forget ``session`` (it ended)."""
        with self._lock:
            mine = self._by_principal.get(session.principal)
            if mine is not None:
                mine.discard(session)
                if not mine:
                    del self._by_principal[session.principal]

    def _revoked(self, principal: str) -> None:
        with self._lock:
            mine = list(self._by_principal.get(principal, ()))
        for session in mine:
            session.recheck_credentials()
