"""A per-process registry: one shared object per key, forgotten in a forked child.

A forked child must not inherit these objects: their locks may be held by a thread that
does not exist in the child.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class ProcessRegistry(Generic[K, V]):
    """``get(key, make)`` returns the one object for ``key`` in this process."""

    def __init__(self) -> None:
        self._items: dict[K, V] = {}
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forget_all)

    def _forget_all(self) -> None:
        self._items = {}
        self._lock = threading.Lock()

    def get(self, key: K, make: Callable[[], V]) -> V:
        """The object for ``key``, made (under the lock) on first use; ``make`` may raise."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                item = self._items[key] = make()
            return item

    def forget(self, key: K) -> None:
        """Drop ``key``'s object."""
        with self._lock:
            self._items.pop(key, None)
