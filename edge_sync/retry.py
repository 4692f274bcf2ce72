"""Exponential back-off shared by every loop that retries."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Delays ``initial * 2^(n-1)`` for the n-th consecutive failure, capped at ``maximum``.

    With the defaults: 5 s, 10 s, 20 s … 320 s (as ACS Edge Sync).
    """

    initial: float = 5.0
    maximum: float = 320.0

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive failures (0 → no wait)."""
        if failures <= 0:
            return 0.0
        return min(self.initial * 2 ** min(failures - 1, 62), self.maximum)
