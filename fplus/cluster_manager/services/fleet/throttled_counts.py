"""Counts for ``/metrics`` that cost Config Store reads: computed at most every ``ttl``
seconds, one computation at a time; a failed one keeps the last counts (with a warning)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from fplus.config_store.client import ConfigStoreError

log = logging.getLogger(__name__)


class ThrottledCounts:
    """``counts()``: ``compute()``'s answer, at most ``ttl`` seconds old (every key of
    ``states`` present, 0 until the first success); ``what`` names it in the warning."""

    def __init__(self, compute: Callable[[], dict[str, int]], states: Iterable[str], what: str,
                 ttl: float = 15.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._compute, self.what, self.ttl, self._clock = compute, what, ttl, clock
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(states, 0)
        self._due = 0.0

    def counts(self) -> dict[str, int]:
        with self._lock:
            if self._clock() < self._due:
                return dict(self._counts)
            self._due = self._clock() + self.ttl  # one computation at a time
        try:
            fresh: dict[str, int] | None = self._compute()
        except ConfigStoreError as exc:
            log.warning("metrics: cannot count %s: %s", self.what, exc)
            fresh = None
        with self._lock:
            if fresh is not None:
                self._counts = fresh
            return dict(self._counts)
