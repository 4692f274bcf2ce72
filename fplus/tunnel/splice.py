"""Join two streams: what one receives the other sends, until both ends are done."""

from __future__ import annotations

import threading
import time

from .mux import Stream, StreamClosed

POLL = 1.0
"""Seconds a read waits at most before it looks whether the other direction moved."""


class Moved:
    """When bytes last crossed in either direction of a splice."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def now(self) -> None:
        self.last = time.monotonic()

    def idle(self) -> float:
        """Seconds since bytes last crossed."""
        return time.monotonic() - self.last


def pump(source: Stream, sink: Stream, timeout: float | None = None,
         moved: Moved | None = None) -> None:
    """Copy ``source``'s data into ``sink`` and end ``sink`` when ``source`` ends; reset
    both if either goes, or nothing moved for ``timeout`` seconds (in either direction of
    the splice sharing ``moved``: an upgrade's bytes may flow one way only for long)."""
    moved = moved or Moved()
    try:
        while chunk := _read(source, timeout, moved):
            moved.now()
            sink.write(chunk, timeout)
            moved.now()
        sink.end()
    except (StreamClosed, TimeoutError):
        source.reset()
        sink.reset()


def _read(source: Stream, timeout: float | None, moved: Moved) -> bytes:
    if timeout is None:
        return source.read()
    while True:
        try:
            return source.read(min(POLL, timeout))
        except TimeoutError:
            if moved.idle() >= timeout:
                raise


def splice(near: Stream, far: Stream, timeout: float | None = None) -> None:
    """Answer ``near`` (a request received) with ``far``'s response (a request sent with
    ``near``'s headers) and join their data both ways; returns when both directions end.
    ``timeout``: the seconds either may go with nothing moving either way."""
    moved = Moved()
    upload = threading.Thread(target=pump, args=(near, far, timeout, moved), daemon=True)
    upload.start()
    try:
        status, headers = far.response(timeout)
        near.respond(status, headers)
    except (StreamClosed, TimeoutError):
        near.reset()
        far.reset()
        upload.join()
        return
    pump(far, near, timeout, moved)
    upload.join()
