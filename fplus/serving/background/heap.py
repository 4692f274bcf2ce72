"""Garbage collection paced for a server that holds a large, long-lived heap.

CPython's automatic full collection walks every tracked object, and a gevent worker answers
nothing while it runs: a Config Store holding 3,333 notify sessions stopped for 0.36 to 0.55 s
each time, every request waiting (and, on a shared PostgreSQL database, every replica
waiting on the write lock it held). The pacer collects the young generations and freezes
what survives every ``FPLUS_GC_FREEZE_EVERY`` seconds (:func:`gc.freeze`), so the automatic
collections walk only what was allocated since. Every ``FPLUS_GC_FULL_EVERY`` seconds it
unfreezes everything and collects it once, returning the cyclic garbage of objects that
became unreachable after they were frozen (a closed session's, say); that one pause is
logged with its length.

Its settings come from the environment, read with the HTTP limits at start-up
(:func:`fplus.serving.http.httplimits.heap_settings`).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from .periodic import Periodic

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HeapSettings:
    """Seconds between freezes (0: the pacer is off) and between full collections."""

    freeze_every: float = 60.0
    full_every: float = 3600.0


class HeapPacer:
    """One :meth:`step` per ``freeze_every`` seconds on a background thread (a greenlet in
    a gevent worker)."""

    def __init__(self, settings: HeapSettings,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings, self._clock = settings, clock
        self._next_full = clock() + settings.full_every
        self._loop: Periodic | None = None

    def step(self) -> bool:
        """Collect the young generations and freeze the survivors; once every
        ``full_every`` seconds first collect everything, frozen or not. True for a full
        collection."""
        now = self._clock()
        full = now >= self._next_full
        if full:
            self._next_full = now + self.settings.full_every
            started = time.perf_counter()
            gc.unfreeze()
            freed = gc.collect()
            log.info("full garbage collection: %d objects freed in %.0f ms", freed,
                     (time.perf_counter() - started) * 1000)
        else:
            gc.collect(1)
        gc.freeze()
        return full

    def start(self) -> None:
        """Run from now on (the first step at once); nothing when the pacer is off."""
        if self.settings.freeze_every > 0 and self._loop is None:
            self._loop = Periodic("gc-pacer", self.settings.freeze_every, self.step)
            self._loop.start()

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.stop()
            self._loop = None
