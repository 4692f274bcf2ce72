"""Logging set-up shared by every command: level from ``LOG_LEVEL``, one line per record; and
:class:`Throttle` for lines anyone can cause."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Hashable

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
DEFAULT_LEVEL = "INFO"


def log_level(value: str | None) -> int:
    """The level a ``LOG_LEVEL`` value names (any case; unset or empty: INFO).

    Raises SystemExit with a one-line message naming ``LOG_LEVEL`` for anything else.
    """
    name = (value or DEFAULT_LEVEL).strip().upper()
    level = logging.getLevelNamesMapping().get(name)
    if level is None:
        raise SystemExit(f"LOG_LEVEL={value!r} is not a log level; "
                         f"use one of {', '.join(LEVELS)}")
    return level


def configure_logging() -> None:
    """Log to stderr at the level ``LOG_LEVEL`` names (INFO by default)."""
    logging.basicConfig(level=log_level(os.environ.get("LOG_LEVEL")), format=FORMAT)


THROTTLE_EVERY_S = 60.0
"""Seconds a :class:`Throttle` keeps quiet about a key after a line for it."""


class Throttle:
    """At most one line per key per ``every`` seconds, for lines a caller without credentials
    can cause (a refused request): :meth:`allow` says whether to write one now and how many
    were held back since the last. Keys are few and fixed (a route and a status), never a
    caller's words."""

    def __init__(self, every: float = THROTTLE_EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.every, self._clock = every, clock
        self._lock = threading.Lock()
        self._said: dict[Hashable, tuple[float, int]] = {}

    def allow(self, key: Hashable) -> int | None:
        """None: hold this line back (counted). Else write it, with the number held back
        for ``key`` since the last line written (0 for none)."""
        now = self._clock()
        with self._lock:
            said_at, held = self._said.get(key, (None, 0))
            if said_at is not None and now - said_at < self.every:
                self._said[key] = (said_at, held + 1)
                return None
            self._said[key] = (now, 0)
            return held
