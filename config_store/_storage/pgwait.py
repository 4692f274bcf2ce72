"""Waiting for PostgreSQL inside the write critical section, without yielding at once.

Writes are serialised (:meth:`~.postgres.PostgresStorage.write`), so how long one holds the
lock bounds every write's throughput. Under gevent, a cooperative wait hands the CPU to the
other greenlets while the database answers, and the writer gets it back only after each of
them has run its own request handling: its critical section then lasts for their work too.
Here a connection's wait first polls its socket with the real (unpatched) ``poll`` for a
short budget, the time a database on a nearby host needs to answer a few statements, and
only then goes on with the cooperative wait: a blocked advisory lock or a slow server still
lets the process serve others.
"""

from __future__ import annotations

import math
import select
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from time import monotonic
from typing import Any, TypeVar

import psycopg
from gevent.monkey import get_original
from psycopg.waiting import Ready, Wait

RV = TypeVar("RV")
Gen = Generator[Any, Any, RV]

_poll: Callable[[], Any] = get_original("select", "poll")
_MASKS = {Wait.R: select.POLLIN, Wait.W: select.POLLOUT,
          Wait.RW: select.POLLIN | select.POLLOUT}


def _ready(events: int) -> int:
    ready = (Ready.R if events & select.POLLIN else 0) | (Ready.W if events & select.POLLOUT else 0)
    if not ready:
        raise psycopg.OperationalError("connection socket closed")
    return ready


def _resumed(gen: Gen[RV], waiting_for: Any) -> Gen[RV]:
    """``gen`` continued from where it asked to wait for ``waiting_for``."""
    try:
        while True:
            ready = yield waiting_for
            waiting_for = gen.send(ready)
    except StopIteration as stop:
        return stop.value


def wait_blocking_first(gen: Gen[RV], fileno: int, budget_s: float,
                        cooperative: Callable[[Gen[RV]], RV]) -> RV:
    """Run psycopg's generator ``gen`` on socket ``fileno``, blocking the process for at most
    ``budget_s`` in all, then handing what is left to ``cooperative`` (psycopg's own wait)."""
    poll = _poll()
    deadline = monotonic() + budget_s
    try:
        waiting_for = next(gen)
        poll.register(fileno, _MASKS[waiting_for])
        while True:
            left_ms = math.ceil((deadline - monotonic()) * 1000)
            events = poll.poll(left_ms) if left_ms > 0 else []
            if not events:
                return cooperative(_resumed(gen, waiting_for))
            waiting_for = gen.send(_ready(events[0][1]))
            poll.modify(fileno, _MASKS[waiting_for])
    except StopIteration as stop:
        return stop.value


class PooledConnection(psycopg.Connection):
    """A connection whose waits first block the process for :attr:`block_s`
    (:func:`wait_blocking_first`); 0, the default, waits cooperatively at once."""

    block_s = 0.0

    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        """See :meth:`psycopg.Connection.wait`."""
        if not self.block_s or timeout is not None:
            return super().wait(gen, interval, timeout)
        return wait_blocking_first(
            gen, self.pgconn.socket, self.block_s,
            lambda rest: super(PooledConnection, self).wait(rest, interval))


@contextmanager
def blocking_waits(conn: psycopg.Connection, budget_s: float) -> Iterator[None]:
    """Inside the block, ``conn``'s waits block first for up to ``budget_s`` each (when it is
    a :class:`PooledConnection`)."""
    if not isinstance(conn, PooledConnection):
        yield
        return
    conn.block_s = budget_s
    try:
        yield
    finally:
        conn.block_s = 0.0
