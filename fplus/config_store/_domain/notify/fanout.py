"""The one thread that turns committed writes into notify updates for sessions that wait.

A write's listeners run in the writer's thread, holding the store's order: each session's
only hands its batch to :data:`FANOUT` there. The fan-out thread then delivers the batch to
every session concerned, one after the other, without waking a thread per session (under
gevent a thread is a greenlet, and a switch to each of a hundred is most of what a hundred
subscribers cost); a session that is busy gets it queued instead (see
:meth:`NotifySession._fan_out`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Callable

log = logging.getLogger(__name__)


class FanOut:
    """Jobs run in order by one daemon thread, started (again, after a fork) on demand."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._jobs: deque[Callable[[], None]] = deque()
        self._pid = 0

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` after every job submitted before it (never blocks)."""
        with self._cond:
            self._jobs.append(job)
            if self._pid != os.getpid():  # no thread in this process yet
                self._pid = os.getpid()
                threading.Thread(target=self._run, daemon=True, name="notify-fanout").start()
            if len(self._jobs) == 1:
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs:
                    self._cond.wait()
                jobs, self._jobs = self._jobs, deque()
            for job in jobs:
                try:
                    job()
                except Exception:
                    log.exception("notify: a fan-out job failed")


FANOUT = FanOut()
"""The process's fan-out thread."""
