"""psycopg's wait under gevent: one hub watcher per wait, no timer unless a deadline.

psycopg picks ``wait_poll`` when gevent has patched ``select``: every query then makes a
gevent ``poll`` object, registers the socket, and waits on it with a 0.1 s interval (a timer
each time, and a wake-up every 0.1 s of a long query). :func:`wait` waits on the socket's
readiness with a libev/libuv I/O watcher of the hub directly, and only arms a timer when the
caller gave a timeout. Installed by :func:`install` (only when gevent patched ``select``).
A readiness reported for a read-or-write wait may be spurious: libpq's calls are
non-blocking, so psycopg's generators just ask again.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Generator
from typing import Any, TypeVar

from psycopg import errors, waiting
from psycopg.waiting import READY_NONE, READY_R, READY_RW, READY_W, WAIT_R, WAIT_W

_EVENTS = {WAIT_R: 1, WAIT_W: 2}  # libev's and libuv's READ and WRITE
_READY = {WAIT_R: READY_R, WAIT_W: READY_W}
RV = TypeVar("RV")


def wait(gen: Generator[Any, Any, RV], fileno: int, interval: float = 0.0,
         timeout: float | None = None) -> RV:
    """psycopg's ``wait()`` contract: drive ``gen`` on ``fileno``, each wait on the hub."""
    from gevent import Timeout, get_hub

    hub = get_hub()
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        s = next(gen)
        while True:
            watcher = hub.loop.io(fileno, _EVENTS.get(s, 3))
            try:
                if deadline is None:
                    hub.wait(watcher)
                    ready = _READY.get(s, READY_RW)
                else:
                    timer = Timeout(max(deadline - time.monotonic(), 0.0))
                    try:
                        with timer:
                            hub.wait(watcher)
                        ready = _READY.get(s, READY_RW)
                    except Timeout as ex:
                        if ex is not timer:
                            raise
                        ready = READY_NONE
            finally:
                watcher.close()
            s = gen.send(ready)
            if deadline is not None and time.monotonic() >= deadline:
                raise errors._WaitTimeout("wait timeout expired")
    except StopIteration as ex:
        rv: RV = ex.value
        return rv


def install() -> bool:
    """Make :func:`wait` psycopg's wait for this process if gevent patched ``select``
    (psycopg then falls back to ``wait_poll``); whether it did. ``PSYCOPG_WAIT_FUNC`` set:
    psycopg's choice stays."""
    monkey = sys.modules.get("gevent.monkey")
    if monkey is None or not monkey.is_module_patched("select") \
            or "PSYCOPG_WAIT_FUNC" in os.environ:
        return False
    waiting.wait = wait
    return True
