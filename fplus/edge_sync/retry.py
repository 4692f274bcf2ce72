"""Exponential back-off shared by every loop that retries."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Delays of up to ``initial * 2^(n-1)`` for the n-th consecutive failure, capped at
    ``maximum``, less a random part of up to ``jitter`` of it.

    The default jitter is full (1.0: drawn evenly between 0 and the step): edges that failed
    together, in a Config Store restart, retry spread over the whole window instead of
    bunched at its end (5, 10 … 320 s steps, as ACS Edge Sync's). A refusal that says when
    to come back (a busy Config Store's ``Retry-After``) is honoured: :meth:`after`.
    """

    initial: float = 5.0
    maximum: float = 320.0
    jitter: float = 1.0

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive failures (0 → no wait)."""
        if failures <= 0:
            return 0.0
        full = min(self.initial * 2.0 ** min(failures - 1, 62), self.maximum)
        return full * (1 - self.jitter * random.random())  # noqa: S311 - spread, not secrecy

    def after(self, failures: int, retry_after: float | None) -> float:
        """:meth:`delay`, or the server's ``retry_after`` (seconds, at most ``maximum``)
        when that is longer."""
        delay = self.delay(failures)
        if retry_after is None:
            return delay
        return max(delay, min(retry_after, self.maximum))
