"""The bounded queue between a notify session and the one writer of its socket."""

from __future__ import annotations

import threading
import time
from collections import deque

from .limits import FellBehind


class Outbox:
    """Updates (JSON text) waiting to be written to one client, bounded in bytes and count.

    An update that finds the queue empty is always taken, whatever its size (one big SEARCH
    answer must not lock a client out); past either bound the queue is dropped at once and
    :class:`FellBehind` raised. Control items (the transport's pongs and its final close)
    jump the queue and are not counted; after :meth:`finish` nothing more is taken.
    Thread-safe; :meth:`get` is for the single writer.
    """

    def __init__(self, max_bytes: int, max_items: int) -> None:
        self.max_bytes, self.max_items = max_bytes, max_items
        self._cond = threading.Condition()
        self._data: deque[str] = deque()
        self._control: deque[object] = deque()
        self._bytes = 0
        self._finished = False

    def put(self, text: str) -> None:
        """Queue one update (ASCII JSON text: its length is its size in bytes)."""
        with self._cond:
            if self._finished:
                return
            if self._data and (self._bytes + len(text) > self.max_bytes
                               or len(self._data) >= self.max_items):
                over = (f"queue over {self.max_bytes} bytes"
                        if self._bytes + len(text) > self.max_bytes
                        else f"over {self.max_items} updates queued")
                self._drop()
                raise FellBehind(f"notify: subscriber fell behind ({over})")
            self._data.append(text)
            self._bytes += len(text)
            self._cond.notify()

    def put_control(self, item: object) -> None:
        """Queue a control item ahead of every update."""
        with self._cond:
            if not self._finished:
                self._control.append(item)
                self._cond.notify()

    def finish(self, item: object) -> None:
        """Drop what waits and make ``item`` the last thing :meth:`get` returns."""
        with self._cond:
            if self._finished:
                return
            self._drop()
            self._control.clear()
            self._control.append(item)
            self._finished = True
            self._cond.notify()

    def get(self, timeout: float) -> str | object | None:
        """The next control item or update; None if none came within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._control and not self._data:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            if self._control:
                return self._control.popleft()
            text = self._data.popleft()
            self._bytes -= len(text)
            return text

    def depth(self) -> tuple[int, int]:
        """``(updates, bytes)`` waiting now."""
        with self._cond:
            return len(self._data), self._bytes

    def _drop(self) -> None:
        self._data.clear()
        self._bytes = 0
