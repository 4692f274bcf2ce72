"""One request's life on a tunnel: ended when it idles or lasts too long, and paced.

One clock per process looks at every open request once a second (a watchdog of its own per
request cost a greenlet and its wake-ups each time).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable

from .bounds import TunnelLimits

CHECK_EVERY = 1.0
"""Seconds between the clock's looks at the open requests."""


class Session:
    """Watches one request: ``on_expire(setting)`` is called (once, from the clock) when
    nothing moved for ``--tunnel-idle-timeout`` or it lasted ``--tunnel-max-session-
    seconds``; :meth:`moved` notes traffic and paces it to ``--tunnel-stream-bytes-per-
    second``."""

    __slots__ = (
        "__weakref__",
        "_sent",
        "closed",
        "expired",
        "last",
        "limits",
        "on_expire",
        "started",
    )

    def __init__(self, limits: TunnelLimits, on_expire: Callable[[str], None]) -> None:
        self.limits, self.on_expire = limits, on_expire
        self.started = self.last = time.monotonic()
        self.expired: str | None = None
        self._sent = 0
        self.closed = False
        CLOCK.watch(self)

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
        self.closed = True
        CLOCK.forget(self)

    def check(self, now: float) -> bool:
        """Cut the request if a bound passed; whether it is over (cut or closed)."""
        if self.closed:
            return True
        setting = None
        if now - self.started >= self.limits.max_session_seconds:
            setting = "tunnel-max-session-seconds"
        elif now - self.last >= self.limits.idle_timeout:
            setting = "tunnel-idle-timeout"
        if setting is None:
            return False
        self.on_expire(setting)
        self.expired = setting  # after: whoever sees it sees the request cut
        return True


class Clock:
    """The process's one watchdog over the open requests (started with the first)."""

    def __init__(self) -> None:
        self._sessions: weakref.WeakSet[Session] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._running = False

    def watch(self, session: Session) -> None:
        with self._lock:
            self._sessions.add(session)
            if not self._running:
                self._running = True
                threading.Thread(target=self._run, daemon=True).start()

    def forget(self, session: Session) -> None:
        with self._lock:
            self._sessions.discard(session)

    def _run(self) -> None:
        while True:
            time.sleep(CHECK_EVERY)
            with self._lock:
                sessions = list(self._sessions)
            now = time.monotonic()
            for session in sessions:
                try:
                    over = session.check(now)
                except Exception:  # one request's cut must not stop the clock
                    over = True
                if over:
                    self.forget(session)


CLOCK = Clock()
"""The clock of this process."""
