"""Join two streams: what one receives the other sends, until both ends are done."""

from __future__ import annotations

import threading

from .mux import Stream, StreamClosed


def pump(source: Stream, sink: Stream, timeout: float | None = None) -> None:
    """Copy ``source``'s data into ``sink`` and end ``sink`` when ``source`` ends; reset
    both if either goes (or nothing moves for ``timeout`` seconds)."""
    try:
        while chunk := source.read(timeout):
            sink.write(chunk, timeout)
        sink.end()
    except (StreamClosed, TimeoutError):
        source.reset()
        sink.reset()


def splice(near: Stream, far: Stream, timeout: float | None = None) -> None:
    """Answer ``near`` (a request received) with ``far``'s response (a request sent with
    ``near``'s headers) and join their data both ways; returns when both directions end."""
    upload = threading.Thread(target=pump, args=(near, far, timeout), daemon=True)
    upload.start()
    try:
        status, headers = far.response(timeout)
        near.respond(status, headers)
    except (StreamClosed, TimeoutError):
        near.reset()
        far.reset()
        upload.join()
        return
    pump(far, near, timeout)
    upload.join()
