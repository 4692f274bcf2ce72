"""Change events published after each committed write."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConfigChanged:
    """An entry of ``app`` for ``obj`` now holds ``value`` (``etag`` None: deleted)."""

    app: str
    obj: str
    value: Any
    etag: str | None


@dataclass(frozen=True)
class StructureChanged:
    """Some class membership or subclass relation changed."""


@dataclass(frozen=True)
class Resynced:
    """This replica missed other replicas' changes and reloaded everything: whatever was
    derived from earlier events (a notify subscription's state, a cache) starts again."""


Event = ConfigChanged | StructureChanged | Resynced
Listener = Callable[[Sequence[Event], int], None]
"""Called with a batch of events and its number (batches are numbered 1, 2, … in order)."""


class EventBus:
    """Fan-out of committed events to listeners (which must not block).

    Publishers hold the store's order lock (:attr:`Core.order`), so batches are numbered in
    the order their changes were read or committed; :attr:`published` is the last number.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self.published = 0

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Register ``listener``; returns a function that unregisters it."""
        with self._lock:
            self._listeners = [*self._listeners, listener]

        def unsubscribe() -> None:
            with self._lock:
                self._listeners = [x for x in self._listeners if x is not listener]

        return unsubscribe

    def publish(self, events: Sequence[Event]) -> None:
        """Deliver ``events`` to every listener."""
        if not events:
            return
        with self._lock:
            self.published += 1
            number = self.published
        for listener in self._listeners:
            try:
                listener(events, number)
            except Exception:
                log.exception("event listener failed")
