"""One request's life on a tunnel: ended when it idles or lasts too long, and paced."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .bounds import TunnelLimits

CHECK_EVERY = 1.0
"""Seconds between a session's checks of its clocks."""


class Session:
    """Watches one request: ``on_expire(setting)`` is called (once, from the watchdog) when
    nothing moved for ``--tunnel-idle-timeout`` or it lasted ``--tunnel-max-session-
    seconds``; :meth:`moved` notes traffic and paces it to ``--tunnel-stream-bytes-per-
    second``."""

    def __init__(self, limits: TunnelLimits, on_expire: Callable[[str], None]) -> None:
        self.limits, self.on_expire = limits, on_expire
        self.started = self.last = time.monotonic()
        self.expired: str | None = None
        self._sent = 0
        self._done = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def moved(self, size: int, paced: bool = False) -> None:
        """``size`` bytes crossed; ``paced``: they count against the rate (an answer's)."""
        self.last = time.monotonic()
        rate = self.limits.stream_bytes_per_second
        if paced and rate > 0:
            self._sent += size
            ahead = self._sent / rate - (self.last - self.started)
            if ahead > 0:
                time.sleep(ahead)

    def close(self) -> None:
        self._done.set()

    def _watch(self) -> None:
        while not self._done.wait(CHECK_EVERY):
            now = time.monotonic()
            setting = None
            if now - self.started >= self.limits.max_session_seconds:
                setting = "tunnel-max-session-seconds"
            elif now - self.last >= self.limits.idle_timeout:
                setting = "tunnel-idle-timeout"
            if setting:
                self.on_expire(setting)
                self.expired = setting  # after: whoever sees it sees the request cut
                return
