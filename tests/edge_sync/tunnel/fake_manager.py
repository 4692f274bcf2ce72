"""The Cluster Manager's end of the tunnel, as small as it gets: a WebSocket server on
loopback (wsproto over a plain or TLS socket) that records each handshake and, per
connection, refuses it (any status, any headers), accepts it and runs the client-side Mux over
binary messages, or accepts it and then says nothing. Plus an HTTP ``CONNECT`` proxy."""

from __future__ import annotations

import base64
import contextlib
import queue
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    RejectConnection,
    Request,
)

from fplus.tunnel.mux import Mux


@dataclass
class Handshake:
    """One connection attempt as the server saw it."""

    at: float
    target: str
    headers: dict[str, str]


class WsTransport:
    """The server side of one WebSocket as a Transport (binary messages both ways)."""

    def __init__(self, sock: socket.socket, ws: WSConnection) -> None:
        self.sock, self.ws = sock, ws
        self.lock = threading.Lock()
        self.pending: list[bytes] = []

    def send(self, data: bytes) -> None:
        with self.lock:
            out = self.ws.send(BytesMessage(data=data))
        self.sock.sendall(out)

    def receive(self) -> bytes:
        while not self.pending:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return b""
            if not data:
                return b""
            with self.lock:
                self.ws.receive_data(data)
                events = list(self.ws.events())
                for event in events:
                    if isinstance(event, BytesMessage) and event.data:
                        self.pending.append(bytes(event.data))
                    elif isinstance(event, Ping):
                        self.sock.sendall(self.ws.send(event.response()))
                    elif isinstance(event, CloseConnection):
                        return b""
        return self.pending.pop(0)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)
        self.sock.close()


@dataclass
class FakeManager:
    """``plan``: what to do with each connection in turn (the last entry repeats):
    ``"accept"``, ``"silent"`` (accept, then never answer), or ``(status, headers)``."""

    plan: list[object] = field(default_factory=lambda: ["accept"])
    tls: ssl.SSLContext | None = None
    port: int = 0
    handshakes: list[Handshake] = field(default_factory=list)
    muxes: queue.Queue[Mux] = field(default_factory=queue.Queue)
    sockets: list[socket.socket] = field(default_factory=list)

    def start(self) -> FakeManager:
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.close()
        self.drop_all()

    def drop_all(self) -> None:
        """Close every connection at once (the Cluster Manager going away)."""
        for sock in list(self.sockets):
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            sock.close()
        self.sockets.clear()

    def next_mux(self, timeout: float = 10) -> Mux:
        return self.muxes.get(timeout=timeout)

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        try:
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_side=True)
            self.sockets.append(sock)
            ws = WSConnection(ConnectionType.SERVER)
            request = None
            while request is None:
                data = sock.recv(65536)
                if not data:
                    return
                ws.receive_data(data)
                request = next((e for e in ws.events() if isinstance(e, Request)), None)
        except OSError:
            return
        self.handshakes.append(Handshake(time.monotonic(), request.target, {
            k.decode().lower(): v.decode() for k, v in request.extra_headers}))
        action = self.plan[min(len(self.handshakes), len(self.plan)) - 1]
        if isinstance(action, tuple):
            status, headers = action
            sock.sendall(ws.send(RejectConnection(
                status_code=status, headers=[(k.encode(), v.encode()) for k, v in headers])))
            sock.close()
            return
        sock.sendall(ws.send(AcceptConnection()))
        if action == "silent":
            return  # the socket stays open, and nothing is ever read or answered
        mux = Mux(WsTransport(sock, ws), client=True)
        self.muxes.put(mux)
        mux.run()


@dataclass
class ConnectProxy:
    """An HTTP proxy that only tunnels (``CONNECT host:port``), recording each request head."""

    heads: list[str] = field(default_factory=list)

    def start(self) -> ConnectProxy:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self) -> None:
        self.listener.close()

    @staticmethod
    def basic(user: str, password: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client,), daemon=True).start()

    def _tunnel(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            data = client.recv(4096)
            if not data:
                return
            head += data
        text = head.decode()
        self.heads.append(text)
        host, port = text.split()[1].rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)))
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    for sock in (src, dst):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
