"""A server WebSocket on the request's own socket, built on wsproto: bounded reads, one writer.

simple_websocket (behind flask-sock) reads in a background thread that also writes to the
socket (pongs, pings, close replies) and gathers every message whole, whatever its size,
before anyone looks at it. Here a message is refused as soon as it passes its limit, one
read past its frame header; nothing but the message being read is buffered; and whoever
owns the connection decides who writes (see :attr:`WebSocket.on_control`). No extension
(permessage-deflate) is negotiated, so no message grows past its size on the wire.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable
from typing import Any

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

RECV_BYTES = 16 * 1024
"""How much one read of the socket takes at most."""
SEND_BYTES = 256 * 1024
"""How much one write to the socket offers at most."""
GONE = (OSError, LocalProtocolError)
"""What reading or writing raises once the client has gone (broken pipe, reset, timeout)."""


def describe(exc: BaseException) -> str:
    """``exc`` in a log line."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class HandshakeFailed(Exception):
    """The request cannot become a WebSocket (nothing was sent)."""


class MessageTooBig(Exception):
    """A message passed its size limit; ``limit`` says which."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"message over {limit} bytes")
        self.limit = limit


class WebSocket:
    """One accepted WebSocket connection.

    One thread reads (:meth:`receive`); one thread at a time writes (:meth:`send`).
    """

    def __init__(self, sock: socket.socket, conn: WSConnection) -> None:
        self.sock, self.conn = sock, conn
        self.on_control: Callable[[Event], None] = self.send
        """Where the reader's control replies (pongs) go: straight to :meth:`send` while
        the reader is the only writer; a writer thread's queue once there is one."""
        self.peer_close: CloseConnection | None = None
        """The close frame the peer sent, if it did."""
        self.last_heard = time.monotonic()
        """When the peer last sent anything (a pong included)."""
        self._parts: list[Any] = []
        self._size = 0

    @classmethod
    def accept(cls, environ: dict[str, Any], headers: list[tuple[str, str]],
               target: str) -> WebSocket:
        """Answer the upgrade request (``headers``, path ``target``) with 101."""
        sock = environ.get("gunicorn.socket")
        if sock is None:
            raise HandshakeFailed("WebSocket needs the gunicorn server")
        conn = WSConnection(ConnectionType.SERVER)
        try:
            conn.initiate_upgrade_connection(
                [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers], target)
        except RemoteProtocolError as exc:
            raise HandshakeFailed(str(exc)) from None
        if not any(isinstance(event, Request) for event in conn.events()):
            raise HandshakeFailed("not a WebSocket upgrade request")
        sock.sendall(conn.send(AcceptConnection()))
        return cls(sock, conn)

    def receive(self, limit: int, timeout: float | None = None) -> str | bytes | None:
        """The next whole message; None once the peer closed (:attr:`peer_close`) or went.

        Raises :class:`MessageTooBig` as soon as the message passes ``limit`` bytes, and
        ``TimeoutError`` after ``timeout`` seconds in all (None: the socket's own timeout,
        per read); a message cut by a timeout goes on at the next call.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            for event in self.conn.events():
                if isinstance(event, (TextMessage, BytesMessage)):
                    data = event.data
                    self._size += len(data.encode()) if isinstance(data, str) else len(data)
                    if self._size > limit:
                        raise MessageTooBig(limit)
                    self._parts.append(data)
                    if event.message_finished:
                        return self._whole()
                elif isinstance(event, Ping):
                    self.on_control(event.response())
                elif isinstance(event, CloseConnection):
                    self.peer_close = event
                    return None
            data = self._recv(deadline)
            if not data:
                return None
            self.last_heard = time.monotonic()
            self.conn.receive_data(data)

    def _whole(self) -> str | bytes:
        parts, self._parts, self._size = self._parts, [], 0
        if isinstance(parts[0], str):
            return "".join(parts)
        return b"".join(parts)

    def _recv(self, deadline: float | None) -> bytes:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message in time")
            self.sock.settimeout(left)
        return self.sock.recv(RECV_BYTES)

    def send(self, event: Event) -> None:
        """Write one event (a text message: ``TextMessage(str)``); only one thread may.

        Raises ``TimeoutError`` when the peer accepts nothing for the socket's timeout (a
        slow but moving peer may take longer in all: a big update on a slow link is fine).
        """
        view = memoryview(self.conn.send(event))
        while view:
            view = view[self.sock.send(view[:SEND_BYTES]):]

    def send_text(self, text: str) -> None:
        """Write one text message."""
        self.send(TextMessage(data=text))

    def close_event(self, code: int, reason: str) -> CloseConnection:
        """The close frame to end with: the echo of the peer's, if it closed first."""
        if self.peer_close is not None:
            return self.peer_close.response()
        return CloseConnection(code=code, reason=reason)

    def close(self, code: int, reason: str) -> None:
        """Send a close frame (if still possible) and stop writing."""
        with contextlib.suppress(OSError, LocalProtocolError):
            self.send(self.close_event(code, reason))
        self.shutdown(socket.SHUT_WR)

    def shutdown(self, how: int = socket.SHUT_RDWR) -> None:
        """Shut the socket down (a blocked read returns); the server closes it later."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(how)
