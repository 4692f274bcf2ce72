"""A small HTTPS server on loopback standing in for the kube-apiserver: it records what it
got (method, path, headers, body) and answers a few paths the way the API server would."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from fplus.serving.http.local_ca import StackCertificates


@dataclass
class Recorded:
    """One request as the server got it."""

    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes

    def values(self, name: str) -> list[str]:
        """Every value of header ``name`` (any case)."""
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def header(self, name: str) -> str | None:
        found = self.values(name)
        assert len(found) <= 1, f"{name} sent {len(found)} times"
        return found[0] if found else None


@dataclass
class FakeApiServer:
    """Paths: ``/api/v1/namespaces`` (JSON), ``POST .../configmaps`` (echoes the body, 201),
    ``/api/v1/pods?watch=true`` (a chunk, then another once :attr:`release` is set),
    ``/api/v1/watch-forever`` (a chunk every 50 ms until the connection goes; then
    :attr:`dropped` is set), ``/api/v1/secrets`` (403), ``.../exec`` with an Upgrade (101,
    ``hello`` at once, then an echo) and ``.../exec-forbidden`` (403)."""

    certs: StackCertificates
    requests: list[Recorded] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    dropped: threading.Event = field(default_factory=threading.Event)
    connections: int = 0
    """How many connections were accepted."""

    def start(self) -> FakeApiServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                fake.connections += 1
                super().setup()  # no Nagle delay, as the API server (Go) has none
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                fake.serve(self)

            def do_POST(self) -> None:
                fake.serve(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.certs.cert, self.certs.key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def ca(self) -> Path:
        return self.certs.ca

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- answering ----------------------------------------------------------------------
    def serve(self, h: BaseHTTPRequestHandler) -> None:
        body = _read_body(h)
        self.requests.append(Recorded(h.command, h.path, list(h.headers.items()), body))
        path = h.path.split("?")[0]
        if h.headers.get("Upgrade"):
            self._upgrade(h, path)
        elif path == "/api/v1/namespaces":
            _json(h, 200, {"kind": "NamespaceList", "items": [{"metadata": {"name": "a"}}]},
                  extra=[("Warning", '299 - "one"'), ("Warning", '299 - "two"')])
        elif path.endswith("/configmaps") and h.command == "POST":
            _json(h, 201, {"got": len(body)})
        elif path == "/api/v1/pods" and "watch=true" in h.path:
            self._chunks(h, [b'{"type":"ADDED"}\n'], then=[b'{"type":"MODIFIED"}\n'])
        elif path == "/api/v1/watch-forever":
            self._forever(h)
        else:
            _json(h, 403, {"kind": "Status", "status": "Failure", "reason": "Forbidden",
                           "code": 403, "message": "fplus:view cannot list secrets"})

    def _chunks(self, h: BaseHTTPRequestHandler, first: list[bytes],
                then: list[bytes]) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        for chunk in first:
            _chunk(h, chunk)
        self.release.wait(10)
        for chunk in then:
            _chunk(h, chunk)
        _chunk(h, b"")

    def _forever(self, h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        try:
            for _ in range(400):  # 20 s at most
                _chunk(h, b'{"type":"BOOKMARK"}\n')
                threading.Event().wait(0.05)
        except OSError:
            self.dropped.set()
        h.close_connection = True

    def _upgrade(self, h: BaseHTTPRequestHandler, path: str) -> None:
        if not path.endswith("/exec"):
            _json(h, 403, {"kind": "Status", "reason": "Forbidden", "code": 403})
            return
        h.wfile.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                      b"Connection: Upgrade\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n"
                      b"\r\nhello")
        h.wfile.flush()
        while data := h.rfile.read1(65536):  # type: ignore[attr-defined]
            h.wfile.write(data)
            h.wfile.flush()
        h.close_connection = True


def _read_body(h: BaseHTTPRequestHandler) -> bytes:
    if h.headers.get("Content-Length"):
        return h.rfile.read(int(h.headers["Content-Length"]))
    if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
        parts = []
        while size := int(h.rfile.readline().split(b";")[0].strip(), 16):
            parts.append(h.rfile.read(size))
            h.rfile.readline()
        h.rfile.readline()
        return b"".join(parts)
    return b""


def _chunk(h: BaseHTTPRequestHandler, data: bytes) -> None:
    h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
    h.wfile.flush()


def _json(h: BaseHTTPRequestHandler, status: int, body: object,
          extra: list[tuple[str, str]] | None = None) -> None:
    data = json.dumps(body).encode()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    for name, value in extra or []:
        h.send_header(name, value)
    h.end_headers()
    h.wfile.write(data)
