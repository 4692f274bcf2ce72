"""A signal that something the status answers show may have changed: a push landed, or the
set of configured repos changed. Watchers (notify/v2 connections) re-read on it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)
Listener = Callable[[], None]


class ChangeSignal:
    """Listeners called on every :meth:`changed`; each must return at once (set an event)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` on every change from now on; returns the unsubscribe function."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def changed(self) -> None:
        """Tell every listener (a listener that raises is logged, the others still told)."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener()
            except Exception:
                log.exception("a change listener failed")
