"""The bounded queue between a notify session and the one writer of its socket."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from .limits import FellBehind

Bytes = bytes | memoryview
BATCH_BYTES = 64 * 1024
"""Updates handed to the writer at once: as many as fit (at least one)."""


class Outbox:
    """Updates (encoded) waiting to be written to one client, bounded in bytes and count.

    An update that finds the queue empty is always taken, whatever its size (one big SEARCH
    answer must not lock a client out); past either bound the queue is dropped at once and
    :class:`FellBehind` raised. Control items (the transport's pongs and its final close)
    jump the queue and are not counted; after :meth:`finish` nothing more is taken.
    Thread-safe; :meth:`get` is for the single writer.

    A transport may :meth:`wire` itself in: then every update is framed as it is put, and
    one that finds nothing waiting and the writer idle is offered to the socket at once
    (without waiting): no hand-off to the writer for a client that keeps up. Whatever part
    of it the socket did not take is the first thing the writer is given.
    """

    def __init__(self, max_bytes: int, max_items: int) -> None:
        self.max_bytes, self.max_items = max_bytes, max_items
        self._cond = threading.Condition(threading.Lock())  # not an RLock: gevent's is pure Python
        self._data: deque[bytes] = deque()
        self._control: deque[object] = deque()
        self._rest: memoryview | None = None
        self._bytes = 0
        self._finished = False
        self._idle = False
        self._frame: Callable[[bytes], bytes] = bytes
        self._send_now: Callable[[bytes], int] | None = None

    def wire(self, frame: Callable[[bytes], bytes],
             send_now: Callable[[bytes], int] | None) -> None:
        """Frame each update with ``frame``; ``send_now(data)`` writes what the socket
        takes without waiting and says how many bytes (0: none, or the socket failed);
        None: every update goes through the writer."""
        with self._cond:
            self._frame, self._send_now = frame, send_now

    def put(self, update: bytes) -> None:
        """Queue one update (its length is its size)."""
        with self._cond:
            if self._finished:
                return
            data = self._frame(update)
            if self._data and (self._bytes + len(data) > self.max_bytes
                               or len(self._data) >= self.max_items):
                over = (f"queue over {self.max_bytes} bytes"
                        if self._bytes + len(data) > self.max_bytes
                        else f"over {self.max_items} updates queued")
                self._drop()
                raise FellBehind(f"notify: subscriber fell behind ({over})")
            if (self._idle and self._send_now is not None and self._rest is None
                    and not self._data and not self._control):
                sent = self._send_now(data)
                if sent == len(data):
                    return
                if sent:
                    self._rest = memoryview(data)[sent:]
                    self._cond.notify()
                    return
            self._data.append(data)
            self._bytes += len(data)
            self._cond.notify()

    def put_control(self, item: object) -> None:
        """Queue a control item ahead of every update."""
        with self._cond:
            if not self._finished:
                self._control.append(item)
                self._cond.notify()

    def finish(self, item: object) -> None:
        """Drop what waits (but the rest of an update part-written) and make ``item`` the
        last thing :meth:`get` returns."""
        with self._cond:
            if self._finished:
                return
            self._drop()
            self._control.clear()
            self._control.append(item)
            self._finished = True
            self._cond.notify()

    def get(self, timeout: float) -> list[Bytes] | object | None:
        """What to write next: the rest of an update part-written, or else a control
        item, or else the updates waiting (framed, in order; as many as fit in
        :data:`BATCH_BYTES`, at least one); None if nothing came within ``timeout``
        seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._idle = True
            try:
                while self._rest is None and not self._control and not self._data:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    self._cond.wait(left)
            finally:
                self._idle = False
            if self._rest is not None:
                rest, self._rest = self._rest, None
                return [rest]
            if self._control:
                return self._control.popleft()
            batch: list[Bytes] = [self._data.popleft()]
            size = len(batch[0])
            while self._data and size + len(self._data[0]) <= BATCH_BYTES:
                batch.append(self._data.popleft())
                size += len(batch[-1])
            self._bytes -= size
            return batch

    @property
    def writer_waiting(self) -> bool:
        """The writer waits in :meth:`get` with nothing to write."""
        return self._idle

    def depth(self) -> tuple[int, int]:
        """``(updates, bytes)`` waiting now."""
        with self._cond:
            return len(self._data), self._bytes

    def _drop(self) -> None:
        self._data.clear()
        self._bytes = 0
