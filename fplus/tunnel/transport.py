"""What a :class:`~fplus.tunnel.mux.Mux` runs on: something that sends and receives bytes."""

from __future__ import annotations

import contextlib
import socket
from typing import Protocol

RECV_BYTES = 64 * 1024
"""How much one read of a socket takes at most."""


class Transport(Protocol):
    """A byte pipe in both directions. One thread receives, one thread sends."""

    def send(self, data: bytes) -> None:
        """Write all of ``data``; raises ``OSError`` once the peer has gone."""

    def receive(self) -> bytes:
        """The next bytes, ``b""`` once the pipe is closed."""

    def close(self) -> None:
        """End the pipe; a blocked :meth:`receive` returns ``b""``. Idempotent."""


class SocketTransport:
    """A connected stream socket as a :class:`Transport`."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive(self) -> bytes:
        try:
            return self.sock.recv(RECV_BYTES)
        except OSError:
            return b""

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
