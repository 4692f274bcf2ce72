"""The edges of ``bench/tunnel.py``: each a WebSocket (websocket-client, as Edge Sync's
:class:`~fplus.edge_sync.tunnel.connection.WebSocketTransport` opens it) to the Cluster
Manager carrying the edge's :class:`fplus.tunnel.mux.Mux` (Edge Sync's ``edge_mux``: its
streams served by :class:`fplus.edge_sync.tunnel.Workers`), and what answers the Cluster
Manager's requests on it: Edge Sync's own forwarder (:class:`fplus.edge_sync.tunnel.
Forwarder`, the code Edge Sync runs) to a stand-in for the kube-apiserver, or a fixed
NamespaceList. Greenlets throughout: the importer monkey-patches the standard library with
gevent first (the edge's threads are greenlets here, real threads in Edge Sync)."""

from __future__ import annotations

import json
import socket
import ssl
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gevent
import websocket
from gevent.pywsgi import WSGIHandler, WSGIServer
from kubernetes import client as kube_client

from fplus.edge_sync.tunnel import ApiServer, Forwarder, Workers, edge_mux
from fplus.edge_sync.tunnel.connection import WebSocketTransport
from fplus.serving.http.local_ca import ensure_certificates
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


SA_TOKEN = "tunnel-bench-edge-sync-service-account-token"
"""The token the edge forwards with, as Edge Sync's service account's."""


def answer_forward(stand: StandIn) -> Forwarder:
    """Edge Sync's forwarder to the stand-in, configured as Edge Sync's Kubernetes client
    would name it (its URL, CA and service-account token): each stream is sent on as Edge
    Sync impersonating the stream's level and principal, over kept connections."""
    cfg = kube_client.Configuration(host=stand.url,
                                    api_key={"authorization": f"Bearer {SA_TOKEN}"})
    if stand.ca is not None:
        cfg.ssl_ca_cert = str(stand.ca)
    return Forwarder(ApiServer.from_configuration(cfg))


class NoDelayHandler(WSGIHandler):
    """pywsgi's handler on a ``TCP_NODELAY`` socket, as Go's servers (the kube-apiserver)
    have: pywsgi sends an answer's head and body apart, and Nagle's algorithm would hold
    the body back for the client's delayed ACK (40 ms)."""

    def handle(self) -> None:
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().handle()


@dataclass
class StandIn:
    """The kube-apiserver stand-in: ``GET /api/v1/namespaces`` → the NamespaceList, over
    HTTPS (a throwaway CA, :attr:`ca`) or plain HTTP. :attr:`impersonated` counts the
    requests that came as Edge Sync forwards them (its token, ``Impersonate-User``)."""

    url: str
    server: WSGIServer
    ca: Path | None
    impersonated: int = 0
    last_user: str | None = None

    def stop(self) -> None:
        self.server.stop()


def stand_in(tls_dir: Path | None = None) -> StandIn:
    """Start the stand-in on loopback (``tls_dir``: HTTPS, its certificates made there)."""
    stand: StandIn

    def app(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        if environ["PATH_INFO"] != "/api/v1/namespaces":
            start("404 Not Found", [("Content-Length", "0")])
            return [b""]
        user = environ.get("HTTP_IMPERSONATE_USER")
        if user is not None and environ.get("HTTP_AUTHORIZATION") == f"Bearer {SA_TOKEN}":
            stand.impersonated += 1
            stand.last_user = user
        start("200 OK", [(k.title(), v) for k, v in JSON_HEADERS])
        return [NAMESPACE_LIST]

    ca = None
    if tls_dir is None:
        server = WSGIServer(("127.0.0.1", 0), app, log=None, error_log=None,
                            handler_class=NoDelayHandler)
    else:
        certs = ensure_certificates(tls_dir, ["127.0.0.1"])
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(certs.cert, certs.key)
        ca = certs.ca
        server = WSGIServer(("127.0.0.1", 0), app, log=None, error_log=None,
                            handler_class=NoDelayHandler, ssl_context=context)
    server.start()
    scheme = "http" if ca is None else "https"
    stand = StandIn(f"{scheme}://127.0.0.1:{server.server_port}", server, ca)
    return stand


@dataclass
class Edge:
    """One simulated edge: its cluster, Edge Sync token and source address, and its tunnel."""

    cluster: str
    token: str
    source: str
    mux: Mux | None = None
    runner: gevent.Greenlet | None = field(default=None, repr=False)

    def connect(self, port: int, on_stream: Callable[[Stream], None], workers: Workers) -> None:
        """Open the tunnel as Edge Sync does (``WebSocketTransport.connect``'s options), from
        this edge's own address."""
        sock = socket.create_connection(("127.0.0.1", port), timeout=60,
                                        source_address=(self.source, 0))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # websocket-client's own
        ws = websocket.create_connection(
            f"ws://127.0.0.1:{port}/v1/cluster/{self.cluster}/tunnel", socket=sock,
            header=[f"Authorization: Bearer {self.token}"], timeout=60,
            enable_multithread=True, skip_utf8_validation=True, suppress_origin=True)
        ws.settimeout(None)
        self.mux = edge_mux(WebSocketTransport(ws), on_stream, workers)
        self.runner = gevent.spawn(self.mux.run)

    def close(self) -> None:
        if self.mux is not None:
            self.mux.close()
        if self.runner is not None:
            self.runner.join(5)


def source(i: int) -> str:
    """Edge ``i``'s loopback address, 127.1.x.y."""
    return f"127.1.{i // 250}.{1 + i % 250}"


def ping_as_edge_sync(found: list[Edge], interval: float) -> gevent.Greenlet:
    """Each edge pings the Cluster Manager over HTTP/2 once it heard nothing for
    ``interval`` s, as Edge Sync's watchdog does (``fplus.edge_sync.tunnel.session.
    PING_INTERVAL``: longer than the 15 s between the Cluster Manager's own pings, so a
    healthy tunnel carries those only), each edge looked at once every ``interval`` s, the
    edges spread evenly over it; one greenlet for all of them, not a watchdog each (a
    thousand waking four times a second would load the machine the Cluster Manager is
    measured on)."""
    def run() -> None:
        step = interval / len(found)
        while True:
            for edge in found:
                mux = edge.mux
                if (mux is not None and not mux.closed.is_set()
                        and time.monotonic() - mux.last_heard >= interval):
                    mux.ping()
                gevent.sleep(step)

    return gevent.spawn(run)
