"""Exponential back-off shared by every loop that retries."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Delays ``initial * 2^(n-1)`` for the n-th consecutive failure, capped at ``maximum``,
    less a random part of up to ``jitter`` of it.

    With the defaults: 3.75 to 5 s, 7.5 to 10 s, 15 to 20 s … 240 to 320 s (ACS Edge Sync's
    5, 10 … 320 s, jittered): edges that failed together, in a Config Store restart, retry
    spread out instead of all at once.
    """

    initial: float = 5.0
    maximum: float = 320.0
    jitter: float = 0.25

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive failures (0 → no wait)."""
        if failures <= 0:
            return 0.0
        full = min(self.initial * 2.0 ** min(failures - 1, 62), self.maximum)
        return full * (1 - self.jitter * random.random())  # noqa: S311 - spread, not secrecy
