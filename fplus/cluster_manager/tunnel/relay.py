"""Replica to replica: a request that reaches a replica without the cluster's tunnel is sent
to the replica holding it, over HTTP/2 on TCP (the same streams as the tunnel).

Each replica listens on its relay address (``--tunnel-relay-address``; what the others dial
is ``--tunnel-relay-advertise``). Every stream proves it comes from a replica with a key
derived from the Cluster Manager's own Config Store password, which every replica has and
nothing else does; it names the cluster and carries the request's headers unchanged. The
relay applies the tunnel's bounds as a local request would.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import socket
import threading
import time
from collections.abc import Callable

from fplus.tunnel import wire
from fplus.tunnel.mux import Headers, Mux, Stream, StreamClosed
from fplus.tunnel.splice import splice
from fplus.tunnel.transport import SocketTransport

from .bounds import Refused
from .registry import Tunnels

log = logging.getLogger(__name__)
KEY = "x-fplus-relay-key"
CLUSTER = "x-fplus-relay-cluster"
CONNECT_TIMEOUT = 5.0


def relay_key(password: str) -> str:
    """The key replicas prove themselves with (derived: the password never travels)."""
    return hmac.new(password.encode(), b"fplus tunnel relay", hashlib.sha256).hexdigest()


def respond_refused(stream: Stream, refused: Refused) -> None:
    """Answer ``stream`` with a refusal's JSON."""
    body = json.dumps(refused.body()).encode()
    headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
    if refused.retry_after is not None:
        headers.append(("retry-after", str(refused.retry_after)))
    stream.answer(refused.status, headers, body)


class RelayServer:
    """Takes other replicas' requests for the tunnels this replica holds."""

    def __init__(self, tunnels: Tunnels, key: str, bind: tuple[str, int],
                 idle_timeout: Callable[[], float]) -> None:
        self.tunnels, self.key, self.idle_timeout = tunnels, key, idle_timeout
        self.listener = socket.create_server(bind, reuse_port=False)
        self.address = self.listener.getsockname()[:2]

    def serve_forever(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            mux = Mux(SocketTransport(conn), client=False, on_stream=self._forward)
            threading.Thread(target=mux.run, daemon=True).start()

    def close(self) -> None:
        self.listener.close()

    def _forward(self, stream: Stream) -> None:
        if not hmac.compare_digest(stream.header(KEY) or "", self.key):
            stream.respond(403, end=True)
            return
        cluster = stream.header(CLUSTER) or ""
        tunnel = self.tunnels.get(cluster)
        if tunnel is None or tunnel.mux.closed.is_set():
            respond_refused(stream, Refused(503, "the cluster's edge left this replica; "
                                                 "try again", retry_after=1))
            return
        headers = [(k, v) for k, v in stream.headers if k not in (KEY, CLUSTER)]
        try:
            release = tunnel.admit(stream.header(wire.PRINCIPAL) or "")
        except Refused as exc:
            respond_refused(stream, exc)
            return
        try:
            bodiless = stream.remote_ended and not stream.buffered  # ended with its head
            splice(stream, tunnel.open(headers, bodiless), self.idle_timeout())
        except StreamClosed:
            respond_refused(stream, Refused(503, "the cluster's edge left; try again",
                                            retry_after=1))
        finally:
            release()


class RelayClients:
    """One HTTP/2 connection to each other replica, opened when first needed."""

    def __init__(self, key: str) -> None:
        self.key = key
        self._muxes: dict[str, Mux] = {}
        self._lock = threading.Lock()

    def open(self, relay: str, cluster: str, headers: Headers, end: bool = False) -> Stream:
        """A request to ``cluster``'s edge through the replica at ``relay`` (host:port;
        ``end``: one without a body); ``OSError`` if that replica cannot be reached."""
        return self._mux(relay).open([*headers, (KEY, self.key), (CLUSTER, cluster)], end)

    def reach(self, relay: str) -> None:
        """Connect to the replica at ``relay`` unless connected; ``OSError`` if it cannot be
        reached."""
        self._mux(relay)

    def _mux(self, relay: str) -> Mux:
        with self._lock:
            mux = self._muxes.get(relay)
            if mux is not None and not mux.closed.is_set():
                return mux
            host, _, port = relay.rpartition(":")
            sock = socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT)
            sock.settimeout(None)
            mux = Mux(SocketTransport(sock), client=True)
            since = mux.last_heard  # before its reader may hear anything
            threading.Thread(target=mux.run, daemon=True).start()
            _heard_from(mux, since, relay, CONNECT_TIMEOUT)
            self._muxes[relay] = mux
            return mux


def _heard_from(mux: Mux, since: float, relay: str, timeout: float) -> None:
    """Wait for the replica's first bytes (its HTTP/2 settings) after ``since``: a replica
    being killed may still take a connection (its listening socket not yet closed) but
    never answers on it. ``OSError`` if nothing came within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while mux.last_heard == since:
        if mux.closed.is_set() or time.monotonic() >= deadline:
            mux.close()
            raise OSError(f"the replica at {relay} took the connection but did not answer")
        time.sleep(0.01)
