"""HTTP/2 streams over a :class:`~fplus.tunnel.transport.Transport`, for threads or greenlets.

One thread reads the transport (:meth:`Mux.run`) and never writes to it; one writer
thread sends what the connection has queued, in order. So two peers each busy sending can
never deadlock on each other's full buffers: their readers keep reading. Received data is
acknowledged (the peer's window reopened) only as a stream's reader takes it, so a stream
nobody reads holds at most its window (:data:`STREAM_WINDOW`) and stalls only itself.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    Event,
    RequestReceived,
    ResponseReceived,
    StreamEnded,
    WindowUpdated,
)
from h2.events import (
    StreamReset as PeerReset,
)
from h2.exceptions import H2Error, NoSuchStreamError, StreamClosedError

from ._h2 import CONNECTION_WINDOW, connection
from ._h2 import STREAM_WINDOW as STREAM_WINDOW  # what a stream nobody reads holds at most
from .transport import Transport

Headers = list[tuple[str, str]]

LINGER = 2.0
"""Seconds a writer with nothing to send waits for more before it leaves."""


class StreamClosed(Exception):
    """The stream (or its whole connection) is gone: nothing more can be written."""


class StreamReset(StreamClosed):
    """The peer reset the stream, or the connection ended before the stream did."""


class Stream:
    """One request and its response on a :class:`Mux`."""

    __slots__ = ("_data", "buffered", "headers", "id", "local_ended", "mux", "remote_ended",
                 "reset_by_peer", "reset_here", "response_headers", "status")

    def __init__(self, mux: Mux, stream_id: int, headers: Headers) -> None:
        self.mux, self.id, self.headers = mux, stream_id, headers
        self.status: int | None = None
        self.response_headers: Headers = []
        self._data: collections.deque[tuple[bytes, int]] = collections.deque()
        self.buffered = 0
        """Bytes received and not yet read."""
        self.remote_ended = False
        self.local_ended = False
        self.reset_by_peer = False
        self.reset_here = False

    def header(self, name: str) -> str | None:
        """A request header's value (``name`` in lower case)."""
        return next((v for k, v in self.headers if k == name), None)

    # -- the client side ---------------------------------------------------------------------
    def response(self, timeout: float | None = None) -> tuple[int, Headers]:
        """Wait for the response's headers: ``(status, headers)``."""
        with self.mux.cond:
            if not self.mux.cond.wait_for(
                    lambda: self.status is not None or self._gone(), timeout):
                raise TimeoutError("no response in time")
            if self.status is None:
                raise StreamReset(f"stream {self.id} ended before its response")
            return self.status, self.response_headers

    # -- the server side ---------------------------------------------------------------------
    def respond(self, status: int, headers: Sequence[tuple[str, str]] = (),
                end: bool = False) -> None:
        """Send the response's headers (``end``: and nothing more)."""
        self.mux.send_headers(self, [(":status", str(status)), *headers], end)

    def answer(self, status: int, headers: Sequence[tuple[str, str]], body: bytes,
               timeout: float | None = None) -> None:
        """Send a whole response: its headers, ``body`` and its end, as few frames sent at
        once as the peer's window allows (one write to the transport for most answers)."""
        self.mux.send_whole(self, [(":status", str(status)), *headers], memoryview(body),
                            timeout)

    # -- both sides --------------------------------------------------------------------------
    def write(self, data: bytes, timeout: float | None = None) -> None:
        """Send ``data``, waiting for the peer's window as long as ``timeout`` (None: ever)."""
        self.mux.send_data(self, memoryview(data), timeout)

    def end(self) -> None:
        """Say this side sends nothing more."""
        self.mux.end_stream(self)

    def read(self, timeout: float | None = None) -> bytes:
        """The next received bytes; ``b""`` once the peer ended. Raises :class:`StreamReset`
        (the peer reset it, the connection went) and ``TimeoutError``."""
        with self.mux.cond:
            if not self.mux.cond.wait_for(
                    lambda: self._data or self.remote_ended or self._gone(), timeout):
                raise TimeoutError("nothing to read in time")
            if not self._data or self.reset_here:
                if self.remote_ended and not self._gone():
                    self.mux.forget_if_done(self)
                    return b""
                raise StreamReset(f"stream {self.id} was reset")
            data, flowed = self._data.popleft()
            self.buffered -= len(data)
            self.mux.acknowledge(self, flowed)
            return data

    def received_whole(self) -> bytes | None:
        """Everything the peer sent, if it has ended already (taken at once, no wait); else
        None: the answer is still coming."""
        with self.mux.cond:
            if not self.remote_ended or self._gone():
                return None
            whole = b"".join(data for data, _ in self._data)
            flowed = sum(size for _, size in self._data)
            self._data.clear()
            self.buffered = 0
            self.mux.acknowledge(self, flowed)
            self.mux.forget_if_done(self)
            return whole

    def reset(self) -> None:
        """Abandon the stream in both directions (the peer sees a reset); idempotent."""
        self.mux.reset_stream(self)

    def _gone(self) -> bool:
        return self.reset_by_peer or self.reset_here or self.mux.closed.is_set()

    def received(self, data: bytes, flowed: int) -> None:
        self._data.append((data, flowed))
        self.buffered += len(data)


class Mux:
    """An HTTP/2 connection as streams: ``client`` opens them (:meth:`open`), the server gets
    each in a new thread (``on_stream``)."""

    __slots__ = ("_closing", "_conn", "_out", "_spawn", "_wake", "_writing", "client",
                 "closed", "cond", "last_heard", "on_stream", "streams", "transport")

    def __init__(self, transport: Transport, *, client: bool,
                 on_stream: Callable[[Stream], None] | None = None,
                 max_streams: int = 1000,
                 spawn: Callable[[Callable[[], None]], object] | None = None) -> None:
        self.transport, self.client, self.on_stream = transport, client, on_stream
        # re-entrant only so a Condition can tell it holds it without trying to take it again
        # (gevent's lock yields to the hub on every failed try: six a request)
        lock = threading.RLock()
        self.cond = _Condition(lock)
        """Guards the connection's state; notified whenever anything arrives."""
        self._wake = _Condition(lock)
        """The writer's wait for something to send (the same lock)."""
        self.closed = threading.Event()
        self.last_heard = time.monotonic()
        self.streams: dict[int, Stream] = {}
        self._spawn = spawn or _thread
        self._out: list[bytes] = []
        self._writing = False
        self._closing = False
        """Whether a writer runs (one is started when there is something to send and stays
        :data:`LINGER` seconds after: an idle tunnel holds none)."""
        self._conn = connection(client, max_streams)
        with self.cond:
            self._conn.initiate_connection()
            self._conn.increment_flow_control_window(CONNECTION_WINDOW - 65535)
            self._queue()

    # -- opening and closing -----------------------------------------------------------------
    def open(self, headers: Headers, end: bool = False) -> Stream:
        """A new stream carrying request ``headers`` (``end``: and no body)."""
        with self.cond:
            self._check_open()
            stream = Stream(self, self._conn.get_next_available_stream_id(), headers)
            self.streams[stream.id] = stream
            try:
                self._conn.send_headers(stream.id, headers, end_stream=end)
            except H2Error as exc:
                del self.streams[stream.id]
                raise StreamClosed(f"cannot open a stream: {exc}") from exc
            stream.local_ended = end
            self._queue()
            return stream

    def close(self) -> None:
        """End the connection: every stream is reset, the transport closed. Idempotent."""
        with self.cond:
            if self._closing:
                return
            self._closing = True
            with contextlib.suppress(H2Error):
                self._conn.close_connection()
                self._queue()
            self.closed.set()
            self.cond.notify_all()
            self._wake.notify_all()
            self._start_writer()  # it closes the transport once what is queued is sent

    @property
    def writer_running(self) -> bool:
        """Whether a writer runs now (none on a tunnel idle for :data:`LINGER` seconds)."""
        return self._writing

    def ping(self) -> None:
        """Ask the peer for a sign of life (its answer updates :attr:`last_heard`)."""
        with self.cond:
            if not self.closed.is_set():
                self._conn.ping(os.urandom(8))
                self._queue()

    # -- the reader --------------------------------------------------------------------------
    def run(self) -> None:
        """Read the transport until it closes, handing out what arrives; then :meth:`close`."""
        try:
            while not self.closed.is_set():
                data = self.transport.receive()
                if not data:
                    break
                self.last_heard = time.monotonic()
                with self.cond:
                    try:
                        events = self._conn.receive_data(data)
                    except H2Error:
                        break
                    started = [s for e in events if (s := self._handle(e)) is not None]
                    self._queue()
                    self.cond.notify_all()
                for stream in started:
                    self._spawn(functools.partial(self._serve, stream))
        finally:
            self.close()

    def _handle(self, event: Event) -> Stream | None:
        """Apply one event (the lock held); a new stream the server must serve is returned."""
        sid = getattr(event, "stream_id", None)
        stream = self.streams.get(sid) if sid is not None else None
        if isinstance(event, RequestReceived) and sid is not None and self.on_stream:
            stream = Stream(self, sid, list(event.headers or []))  # type: ignore[arg-type]
            self.streams[sid] = stream
            return stream
        if isinstance(event, ResponseReceived) and stream is not None:
            headers: Headers = list(event.headers or [])  # type: ignore[arg-type]
            stream.status = int(dict(headers).get(":status", "0"))
            stream.response_headers = [(k, v) for k, v in headers if not k.startswith(":")]
        elif isinstance(event, DataReceived) and sid is not None:
            flowed = event.flow_controlled_length or 0
            if stream is not None and event.data:
                stream.received(event.data, flowed)
            elif flowed:
                with contextlib.suppress(H2Error):  # nobody reads it: give the window back
                    self._conn.acknowledge_received_data(flowed, sid)
        elif isinstance(event, StreamEnded) and stream is not None:
            stream.remote_ended = True
            self.forget_if_done(stream)
        elif isinstance(event, PeerReset) and stream is not None:
            stream.reset_by_peer = stream.remote_ended = stream.local_ended = True
            self.streams.pop(stream.id, None)
        elif isinstance(event, ConnectionTerminated):
            self.closed.set()
        elif isinstance(event, WindowUpdated):
            pass  # the notify_all after every read wakes the writers waiting for it
        return None

    def _serve(self, stream: Stream) -> None:
        assert self.on_stream is not None
        try:
            self.on_stream(stream)
        except StreamClosed:
            pass  # the peer or the connection went: nothing is left to answer
        finally:
            if not stream.local_ended:
                stream.reset()

    # -- what the streams call (each takes the lock) -----------------------------------------
    def send_headers(self, stream: Stream, headers: Headers, end: bool) -> None:
        with self.cond:
            self._check(stream)
            try:
                self._conn.send_headers(stream.id, headers, end_stream=end)
            except (StreamClosedError, NoSuchStreamError) as exc:
                raise StreamClosed(str(exc)) from exc
            stream.local_ended = end
            self.forget_if_done(stream)
            self._queue()

    def send_whole(self, stream: Stream, headers: Headers, body: memoryview,
                   timeout: float | None) -> None:
        """Headers, body and end in one hold of the lock while the window allows; what it
        does not is sent as :meth:`send_data` would."""
        with self.cond:
            self._check(stream)
            try:
                self._conn.send_headers(stream.id, headers, end_stream=not body)
                while body and (window := self._window(stream)) > 0:
                    self._conn.send_data(stream.id, bytes(body[:window]),
                                         end_stream=len(body) <= window)
                    body = body[window:]
            except (StreamClosedError, NoSuchStreamError) as exc:
                raise StreamClosed(str(exc)) from exc
            stream.local_ended = not body
            self.forget_if_done(stream)
            self._queue()
        if body:
            self.send_data(stream, body, timeout)
            self.end_stream(stream)

    def send_data(self, stream: Stream, data: memoryview, timeout: float | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while data:
            with self.cond:
                self._check(stream)
                window = self._window(stream)
                while window <= 0:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise TimeoutError("the peer took nothing in time")
                    self.cond.wait(left)
                    self._check(stream)
                    window = self._window(stream)
                chunk = data[:window]
                try:
                    self._conn.send_data(stream.id, bytes(chunk))
                except (StreamClosedError, NoSuchStreamError) as exc:
                    raise StreamClosed(str(exc)) from exc
                self._queue()
            data = data[len(chunk):]

    def end_stream(self, stream: Stream) -> None:
        with self.cond:
            if stream.local_ended or self.closed.is_set():
                return
            with contextlib.suppress(StreamClosedError, NoSuchStreamError):
                self._conn.end_stream(stream.id)
            stream.local_ended = True
            self.forget_if_done(stream)
            self._queue()

    def reset_stream(self, stream: Stream) -> None:
        with self.cond:
            if not (stream.local_ended and stream.remote_ended):
                stream.reset_here = True  # a read waiting on it wakes and says so
                self.cond.notify_all()
            stream.local_ended = True
            if self.streams.pop(stream.id, None) is None or self.closed.is_set():
                return
            with contextlib.suppress(H2Error):
                self._conn.reset_stream(stream.id, ErrorCodes.CANCEL)
            self._queue()

    def acknowledge(self, stream: Stream, flowed: int) -> None:
        """``flowed`` bytes of ``stream`` were read (the lock held): reopen the window."""
        if flowed and not self.closed.is_set():
            with contextlib.suppress(H2Error):
                self._conn.acknowledge_received_data(flowed, stream.id)
            self._queue()

    # -- inside ------------------------------------------------------------------------------
    def _window(self, stream: Stream) -> int:
        try:
            window = self._conn.local_flow_control_window(stream.id)
        except (StreamClosedError, NoSuchStreamError) as exc:
            raise StreamClosed(str(exc)) from exc
        return min(window, self._conn.max_outbound_frame_size)

    def _check(self, stream: Stream) -> None:
        if self.closed.is_set():
            raise StreamReset("the tunnel is closed")
        if stream.reset_by_peer:
            raise StreamReset(f"stream {stream.id} was reset")

    def _check_open(self) -> None:
        if self.closed.is_set():
            raise StreamClosed("the tunnel is closed")

    def forget_if_done(self, stream: Stream) -> None:
        """Drop a stream both sides ended and whose data was read (the lock held)."""
        if stream.local_ended and stream.remote_ended and not stream.buffered:
            self.streams.pop(stream.id, None)

    def _queue(self) -> None:
        """Move what the connection wants sent to the writer (the lock held)."""
        data = self._conn.data_to_send()
        if data:
            self._out.append(data)
            self._wake.notify()
            self._start_writer()

    def _start_writer(self) -> None:
        """Start a writer unless one runs (the lock held)."""
        if not self._writing:
            self._writing = True
            self._spawn(self._writer)

    def _writer(self) -> None:
        """Send what is queued, in order; leave after :data:`LINGER` idle seconds, or close
        the transport once the connection is closed and everything queued is sent."""
        try:
            while True:
                with self.cond:
                    if not self._out and not self.closed.is_set():
                        self._wake.wait_for(lambda: bool(self._out) or self.closed.is_set(),
                                            LINGER)
                    if not self._out and not self.closed.is_set():
                        self._writing = False
                        return
                    pending = b"".join(self._out)
                    self._out.clear()
                if not pending:
                    break  # closed, and all sent
                self.transport.send(pending)
        except OSError:
            pass
        self.closed.set()
        self.transport.close()
        with self.cond:
            self.cond.notify_all()


class _Condition(threading.Condition):
    """A condition whose waiters wait in a list, not a deque: an idle tunnel has none, and an
    empty deque costs 600 bytes (a busy one has a few: removing from the middle of a short
    list is as quick)."""

    def __init__(self, lock: threading.RLock) -> None:
        super().__init__(lock)
        self._waiters = cast(Any, [])


def _thread(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread
