"""Connections counted per principal: a cap that every token of one principal shares."""

from __future__ import annotations

import threading
from collections.abc import Hashable


class PrincipalSlots:
    """At most ``limit`` concurrent holders per key (a principal's uuid), process-wide."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._held: dict[Hashable, int] = {}

    def take(self, key: Hashable) -> bool:
        """Take one of ``key``'s slots; False (nothing taken) when all are held."""
        with self._lock:
            held = self._held.get(key, 0)
            if held >= self.limit:
                return False
            self._held[key] = held + 1
            return True

    def give_back(self, key: Hashable) -> None:
        """Return a slot :meth:`take` gave."""
        with self._lock:
            held = self._held.pop(key, 0) - 1
            if held > 0:
                self._held[key] = held

