"""Admission control: new work of one kind let in at the rate the server can serve it.

A token bucket: ``burst`` admissions at once, refilled at ``rate`` a second. Past it the
caller answers at once, cheaply (503 and ``Retry-After``), before any work that costs: a
storm of clients (a replica restarted under a fleet, a site's power back) is served at the
rate the server keeps up with, instead of every client being taken in, none answered within
its timeout, and all of them leaving and coming back to start again.

The ``Retry-After`` a refusal carries is an appointment, jittered: refused clients are given
the moments the bucket will have room for them, one every ``1 / rate`` seconds after the
last one given, each told a whole number of seconds drawn around its moment (never less than
one, never more than ``max_wait``). A burst of 1,000 clients against 100 a second comes back
spread over ten seconds rather than all at once after the same delay.

Thread-safe (a lock around a few arithmetic operations): refusing costs microseconds.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_WAIT_S = 60.0
"""The longest ``Retry-After`` a refusal asks for."""


@dataclass
class Admission:
    """A token bucket of ``burst`` refilled at ``rate`` a second; ``rate`` 0: no limit."""

    rate: float
    burst: int
    max_wait: float = MAX_WAIT_S
    clock: Callable[[], float] = time.monotonic
    admitted: int = 0
    """How many were let in (for metrics)."""
    refused: int = 0
    """How many were turned away (for metrics)."""
    _tokens: float = field(init=False)
    _stamp: float = field(init=False)
    _horizon: float = field(init=False)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.rate < 0 or self.burst < 0:
            raise ValueError("an admission rate and burst are 0 or more")
        self.burst = max(1, self.burst)
        self._tokens = float(self.burst)
        self._stamp = self._horizon = self.clock()

    @property
    def limited(self) -> bool:
        """Whether anything is ever refused."""
        return self.rate > 0

    def admit(self) -> int | None:
        """None when one more may come in now (it took its place); else the whole seconds
        it is asked to wait (``Retry-After``), drawn at random around its turn."""
        if not self.limited:
            return None
        with self._lock:
            now = self.clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.rate)
            self._stamp = now
            if self._tokens >= 1.0 - 1e-9:  # a place, rounding aside
                self._tokens -= 1.0
                self.admitted += 1
                return None
            self.refused += 1
            # the next free moment after those already given out, at most max_wait ahead
            self._horizon = min(max(self._horizon, now) + 1.0 / self.rate, now + self.max_wait)
            due = self._horizon - now
        spread = due * (0.5 + random.random())  # noqa: S311 - spread, not secrecy
        return int(min(self.max_wait, max(1.0, math.ceil(spread))))
