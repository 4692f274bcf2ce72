"""Per-key serialised work on a bounded pool of threads.

A key is never handled by two workers at once; submitting a key that is queued or running
marks it to run (again) once, with the newest state (the handler reads it when it runs).
A failing key is retried with exponential back-off; a new submission cancels the wait. A
handler that is waiting for something (not failing) raises :class:`RequeueAfter`. The key
due first runs first; finding it costs the logarithm of the keys waiting (10,000 clusters
queued at once are each picked without looking at the others).
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class RequeueAfter(Exception):
    """Raised by a handler to be run again after ``seconds``, without counting as a failure."""

    def __init__(self, seconds: float, why: str = "") -> None:
        super().__init__(why or f"again in {seconds:.0f} s")
        self.seconds = seconds


class KeyedWorkQueue:
    """Run ``handler(key)`` for submitted keys on ``workers`` threads."""

    def __init__(self, handler: Callable[[str], None], workers: int = 8,
                 backoff_initial: float = 2.0, backoff_max: float = 300.0) -> None:
        self.handler = handler
        self.workers = workers
        self.backoff_initial, self.backoff_max = backoff_initial, backoff_max
        self._cond = threading.Condition()
        self._due: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []
        """``(due, key)`` of every due time set; one whose time is no longer the key's is
        stale and dropped when it comes up."""
        self._running: set[str] = set()
        self._failures: dict[str, int] = {}
        self._threads: list[threading.Thread] = []
        self._stopping = False

    def start(self) -> None:
        """Start the workers (once: make a new queue to start again)."""
        if self.started:
            raise RuntimeError("a work queue starts once")
        for i in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"reconcile-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    @property
    def started(self) -> bool:
        """:meth:`start` was called."""
        return bool(self._threads)

    def stop(self, wait: float = 0.0) -> bool:
        """Stop taking work; running handlers finish. Wait up to ``wait`` seconds for them;
        True if none is still running."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        deadline = time.monotonic() + wait
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)

    def submit(self, key: str) -> None:
        """Run ``key`` as soon as a worker is free (and it is not running)."""
        with self._cond:
            self._set_due(key, time.monotonic())
            self._failures.pop(key, None)
            self._cond.notify()

    def depth(self) -> int:
        """Keys waiting (including those backing off)."""
        with self._cond:
            return len(self._due)

    def _set_due(self, key: str, due: float) -> None:
        """Call with the lock held."""
        self._due[key] = due
        heapq.heappush(self._heap, (due, key))

    def _next(self) -> str | None:
        with self._cond:
            while not self._stopping:
                now = time.monotonic()
                key, due = self._first()
                if key is not None and due <= now:
                    del self._due[key]
                    self._running.add(key)
                    return key
                self._cond.wait(timeout=None if key is None else due - now)
            return None

    def _first(self) -> tuple[str | None, float]:
        """The key not running that is due first, and when (call with the lock held)."""
        busy: list[tuple[float, str]] = []  # due but running: back once one is picked
        found: tuple[str | None, float] = (None, 0.0)
        while self._heap:
            due, key = self._heap[0]
            if self._due.get(key) != due:  # stale: the key ran or was due again since
                heapq.heappop(self._heap)
            elif key in self._running:
                busy.append(heapq.heappop(self._heap))
            else:
                found = (key, due)
                break
        for entry in busy:
            heapq.heappush(self._heap, entry)
        return found

    def _work(self) -> None:
        while (key := self._next()) is not None:
            try:
                self.handler(key)
            except RequeueAfter as wait:
                self._run_later(key, wait.seconds)
            except Exception as exc:
                self._retry_later(key, exc)
            else:
                with self._cond:
                    self._failures.pop(key, None)
            finally:
                with self._cond:
                    self._running.discard(key)
                    self._cond.notify_all()

    def _run_later(self, key: str, delay: float) -> None:
        with self._cond:
            self._failures.pop(key, None)
            if key not in self._due:  # a newer submission runs at once instead
                self._set_due(key, time.monotonic() + delay)

    def _retry_later(self, key: str, exc: Exception) -> None:
        with self._cond:
            n = self._failures.get(key, 0) + 1
            self._failures[key] = n
            delay = min(self.backoff_initial * 2 ** (n - 1), self.backoff_max)
            if key not in self._due:  # a newer submission runs at once instead
                self._set_due(key, time.monotonic() + delay)
        log.warning("%s failed (attempt %d, retrying in %.0f s): %s", key, n, delay, exc)
