"""Request bodies read against the clock: an idle timeout per read and a minimum rate.

Under gunicorn's gevent worker, :func:`timed_bodies` wraps ``wsgi.input`` so that no read
waits longer than ``body_timeout`` for data, and the whole body must arrive within
``body_timeout`` plus one second per ``body_min_rate`` bytes (a client trickling a byte every
few seconds never trips an idle timeout alone). A body that stalls raises
:class:`BodyTimeout`, a 408 the app answers like any HTTP error; the connection then closes,
as gunicorn never reuses a connection whose body read failed.

The socket timeout is set only while a body is read, so answers and upgraded WebSockets are
not bound by it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import gevent
from werkzeug.exceptions import RequestTimeout

from .httplimits import HttpLimits

_MIN_STEP = 1024
_MAX_STEP = 1024 * 1024


class BodyTimeout(RequestTimeout):
    """408: the request body stalled or arrived slower than the minimum rate."""


class _Deadline(Exception):
    """The whole-body deadline passed during a read (an Exception, so gunicorn marks the
    body as failed and closes the connection)."""


class TimedInput:
    """``wsgi.input`` read with an idle timeout per read and a deadline for the whole body."""

    def __init__(self, stream: IO[bytes], sock: Any, limits: HttpLimits,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._sock = sock
        self._limits = limits
        self._clock = clock
        self._start = clock()
        self._received = 0
        self._failed = False

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` bytes (all that is left if negative), fewer only at the end."""
        want = -1 if size is None or size < 0 else size
        parts: list[bytes] = []
        while want != 0:
            chunk = self._step(self._stream.read, want)
            if not chunk:
                break
            parts.append(chunk)
            if want > 0:
                want -= len(chunk)
        return b"".join(parts)

    def readline(self, size: int | None = -1) -> bytes:
        """One line (at most ``size`` bytes if that is not negative)."""
        want = -1 if size is None or size < 0 else size
        parts: list[bytes] = []
        while want != 0:
            chunk = self._step(self._stream.readline, want)
            if not chunk:
                break
            parts.append(chunk)
            if chunk.endswith(b"\n"):
                break
            if want > 0:
                want -= len(chunk)
        return b"".join(parts)

    def readlines(self, hint: int = -1) -> list[bytes]:
        """The remaining lines."""
        return list(self)

    def __iter__(self) -> Iterator[bytes]:
        while line := self.readline():
            yield line

    def _step(self, read: Callable[[int], bytes], want: int) -> bytes:
        """One bounded read through ``read``, under the idle timeout and the deadline."""
        if self._failed:
            raise BodyTimeout(self._message())
        limits = self._limits
        idle = limits.body_timeout
        left: float | None = None
        step = 64 * 1024
        if limits.body_min_rate:
            left = (self._start + idle + self._received / limits.body_min_rate
                    - self._clock())
            if left <= 0:
                self._failed = True
                raise BodyTimeout(self._message())
            # small enough to arrive before the deadline at the minimum rate
            step = min(max(_MIN_STEP, int(left * limits.body_min_rate / 2)), _MAX_STEP)
            idle = min(idle, left)
        if want > 0:
            step = min(step, want)
        prior = self._sock.gettimeout()
        self._sock.settimeout(idle)
        try:
            if left is None:
                data = read(step)
            else:
                with gevent.Timeout(left, _Deadline):
                    data = read(step)
        except (_Deadline, TimeoutError):
            self._failed = True
            raise BodyTimeout(self._message()) from None
        finally:
            self._sock.settimeout(prior)
        self._received += len(data)
        return data

    def _message(self) -> str:
        limits = self._limits
        rate = (f", or slower than {limits.body_min_rate} bytes/s"
                if limits.body_min_rate else "")
        return (f"the request body stopped arriving (nothing for {limits.body_timeout:g} s"
                f"{rate})")


def timed_bodies(app: Callable[..., Iterable[bytes]],
                 limits: HttpLimits) -> Callable[..., Iterable[bytes]]:
    """``app`` with ``wsgi.input`` read as :class:`TimedInput` when served by gunicorn."""

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        sock = environ.get("gunicorn.socket")
        if sock is not None and hasattr(sock, "settimeout"):
            environ["wsgi.input"] = TimedInput(environ["wsgi.input"], sock, limits)
        return app(environ, start_response)

    return guarded
