"""A background loop running one step every few seconds until stopped."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Periodic:
    """Runs ``step`` on a daemon thread every ``interval`` seconds (first at once) between
    :meth:`start` and :meth:`stop`; a step that raises is logged and the loop goes on (a bug
    must not end the work for everyone). Started again after a stop, it runs again."""

    def __init__(self, name: str, interval: float, step: Callable[[], object]) -> None:
        self.name, self.interval, self.step = name, interval, step
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` was called (a long step may check it between items)."""
        return self._stop.is_set()

    def start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        stop = self._stop
        while not stop.is_set():
            try:
                self.step()
            except Exception:
                log.exception("%s: a pass failed; trying again in %g s", self.name,
                              self.interval)
            stop.wait(self.interval)
