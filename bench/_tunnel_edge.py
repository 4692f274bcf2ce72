"""The edges of ``bench/tunnel.py``: each a WebSocket (websocket-client) to the Cluster
Manager carrying a server-side :class:`fplus.tunnel.mux.Mux`, as Edge Sync's tunnel does, and
what answers the Cluster Manager's requests on it: a forward to a stand-in for the
kube-apiserver, or a fixed NamespaceList. Greenlets throughout: the importer monkey-patches
the standard library with gevent first."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import gevent
import requests
import websocket
from gevent.pywsgi import WSGIHandler, WSGIServer

from fplus.tunnel import wire
from fplus.tunnel.mux import Mux, Stream

NAMESPACE_LIST = json.dumps({
    "kind": "NamespaceList", "apiVersion": "v1", "metadata": {"resourceVersion": "4242"},
    "items": [{"metadata": {"name": name, "uid": f"00000000-0000-4000-8000-{i:012d}",
                            "resourceVersion": str(100 + i),
                            "creationTimestamp": "2026-01-01T00:00:00Z",
                            "labels": {"kubernetes.io/metadata.name": name}},
               "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
              for i, name in enumerate(("default", "kube-system", "kube-public",
                                        "kube-node-lease", "flux-system", "fplus-edge"))]},
    separators=(",", ":")).encode()
JSON_HEADERS = [("content-type", "application/json"),
                ("content-length", str(len(NAMESPACE_LIST)))]


class WsTransport:
    """A client WebSocket (websocket-client) as a :class:`~fplus.tunnel.transport.Transport`."""

    def __init__(self, ws: websocket.WebSocket) -> None:
        self.ws = ws

    def send(self, data: bytes) -> None:
        try:
            self.ws.send_bytes(data)
        except websocket.WebSocketException as exc:  # the Mux's writer expects OSError
            raise OSError(str(exc)) from exc

    def receive(self) -> bytes:
        try:
            opcode, data = self.ws.recv_data()
        except (websocket.WebSocketException, OSError):
            return b""
        return bytes(data) if opcode == websocket.ABNF.OPCODE_BINARY else b""

    def close(self) -> None:
        self.ws.shutdown()


def _drain(stream: Stream) -> bytes:
    body = b""
    while chunk := stream.read():
        body += chunk
    return body


def answer_fixed(stream: Stream) -> None:
    """The edge answers the NamespaceList itself (no kube-apiserver behind it)."""
    wire.parse_request(stream.headers)
    _drain(stream)
    stream.respond(200, JSON_HEADERS)
    stream.write(NAMESPACE_LIST)
    stream.end()


def answer_forward(apiserver: str, session: requests.Session) -> Callable[[Stream], None]:
    """The edge forwards each request to ``apiserver`` (keep-alive) and relays its answer."""
    def forward(stream: Stream) -> None:
        asked = wire.parse_request(stream.headers)
        body = _drain(stream)
        resp = session.request(asked.method, apiserver + asked.path, headers=dict(asked.headers),
                               data=body or None, timeout=30)
        headers = wire.response_headers(resp.status_code, resp.raw.headers.items())
        stream.respond(resp.status_code, headers[1:])  # [0] is :status
        stream.write(resp.content)
        stream.end()
    return forward


class NoDelayHandler(WSGIHandler):
    """pywsgi's handler on a ``TCP_NODELAY`` socket, as Go's servers (the kube-apiserver)
    have: pywsgi sends an answer's head and body apart, and Nagle's algorithm would hold
    the body back for the client's delayed ACK (40 ms)."""

    def handle(self) -> None:
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().handle()


def stand_in() -> tuple[str, WSGIServer]:
    """The kube-apiserver stand-in: ``GET /api/v1/namespaces`` → the NamespaceList."""
    def app(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        if environ["PATH_INFO"] != "/api/v1/namespaces":
            start("404 Not Found", [("Content-Length", "0")])
            return [b""]
        start("200 OK", [(k.title(), v) for k, v in JSON_HEADERS])
        return [NAMESPACE_LIST]

    server = WSGIServer(("127.0.0.1", 0), app, log=None, error_log=None,
                        handler_class=NoDelayHandler)
    server.start()
    return f"http://127.0.0.1:{server.server_port}", server


@dataclass
class Edge:
    """One simulated edge: its cluster, Edge Sync token and source address, and its tunnel."""

    cluster: str
    token: str
    source: str
    mux: Mux | None = None
    runner: gevent.Greenlet | None = field(default=None, repr=False)

    def connect(self, port: int, on_stream: Callable[[Stream], None]) -> None:
        sock = socket.create_connection(("127.0.0.1", port), timeout=60,
                                        source_address=(self.source, 0))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # websocket-client's own
        ws = websocket.create_connection(
            f"ws://127.0.0.1:{port}/v1/cluster/{self.cluster}/tunnel", socket=sock,
            header=[f"Authorization: Bearer {self.token}"], timeout=60)
        ws.settimeout(None)
        self.mux = Mux(WsTransport(ws), client=False, on_stream=on_stream)
        self.runner = gevent.spawn(self.mux.run)

    def close(self) -> None:
        if self.mux is not None:
            self.mux.close()
        if self.runner is not None:
            self.runner.join(5)


def source(i: int) -> str:
    """Edge ``i``'s loopback address, 127.1.x.y."""
    return f"127.1.{i // 250}.{1 + i % 250}"
