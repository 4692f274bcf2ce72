"""A stand-in edge for the Cluster Manager's tunnel tests: the WebSocket Edge Sync would open
(``ws://<CM>/v1/cluster/<uuid>/tunnel``, the cluster's own Edge Sync principal's Bearer token)
carrying a server-side :class:`~fplus.tunnel.mux.Mux`, whose streams are answered here rather
than by a kube-apiserver.

Every request is recorded as the edge parsed it (:func:`fplus.tunnel.wire.parse_request`),
with its body. The answer depends on the path's first part (anything else is echoed as JSON):

- ``/stream``: one line, then a wait for :attr:`StandInEdge.gate`, then a second line and the
  end (a watch's first event arrives before the edge ends it);
- ``/tick``: a line every ``?gap=`` seconds (0.2), until the stream is reset;
- ``/flood``: 64 KiB chunks as fast as the tunnel takes them, until the stream is reset;
- ``/sized``: ``?size=`` bytes (:func:`sized_body`) in 4 KiB chunks as fast as the tunnel
  takes them, and the end; with ``?pause=``, the head, then that many seconds, then the bytes
  (the answer is still coming when its head is read);
- ``/hang``: the body read, then no answer ever (until the stream is reset);
- an upgrade (``x-fplus-upgrade``): a 101 with the headers an API server would send, then
  every received chunk echoed back prefixed with ``echo:`` (with ``?ticks=N``: N lines, one
  a 0.2 s, and the end, reading nothing).

:func:`raw_upgrade` and :func:`echoed` play kubectl's side of an upgrade on a raw socket.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import queue
import socket
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import requests
import websocket

from fplus.cluster_manager.model.apps_and_roles import SYNC
from fplus.config_store.client import ConfigStoreClient
from fplus.tunnel import wire
from fplus.tunnel.mux import Mux, Stream, StreamClosed
from harness.servers import ADMIN_PASSWORD
from harness.stack import Stack, status

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
FLOOD_CHUNK = 64 * 1024


# -- the client's side -------------------------------------------------------------------------
def raw_upgrade(url: str, auth: tuple[str, str], path: str,
             headers: dict[str, str]) -> tuple[socket.socket, str, dict[str, str], bytes]:
    """An upgrade request (``exec``, ``attach``: Connection: Upgrade) on a socket of its own,
    as kubectl sends one: the socket, the answer's status line, its headers (lower-case) and
    the bytes that came after them."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    basic = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    head = {"Host": f"{host}:{port}", "Authorization": f"Basic {basic}",
            "Connection": "Upgrade", **headers}
    sock.sendall((f"GET {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items())
                  + "\r\n").encode())
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = sock.recv(4096)
        assert chunk, got
        got += chunk
    raw, rest = got.split(b"\r\n\r\n", 1)
    line, *fields = raw.decode("latin-1").split("\r\n")
    return sock, line, {k.lower(): v.strip() for k, v in
                        (f.split(":", 1) for f in fields)}, rest


def echoed(sock: socket.socket, data: bytes, already: bytes = b"") -> bytes:
    """Send ``data`` on an upgraded connection and read the edge's echo of it."""
    sock.sendall(data)
    got = already
    while len(got) < len(data) + 5:
        chunk = sock.recv(4096)
        assert chunk, got
        got += chunk
    return got


# -- the edge's side ---------------------------------------------------------------------------
class ClientWebSocketTransport:
    """A :class:`~fplus.tunnel.transport.Transport` on a ``websocket-client`` connection:
    each send one binary message (under a lock: the library answers pings from the reader)."""

    def __init__(self, ws: websocket.WebSocket) -> None:
        self.ws = ws
        self._lock = threading.Lock()

    def send(self, data: bytes) -> None:
        with self._lock:
            try:
                self.ws.send_binary(data)
            except websocket.WebSocketException as exc:
                raise OSError(str(exc)) from exc

    def receive(self) -> bytes:
        try:
            data = self.ws.recv()
        except (websocket.WebSocketException, OSError):
            return b""
        return data if isinstance(data, bytes) else b""

    def close(self) -> None:
        _cut(self.ws)


@dataclass
class Seen:
    """A request as the edge received it."""

    request: wire.KubeRequest
    raw: list[tuple[str, str]]
    """The stream's headers as they arrived."""
    body: bytes = b""
    reset: threading.Event = field(default_factory=threading.Event)
    """Set when the Cluster Manager reset the stream (the ``/hang`` and ``/tick`` paths)."""


def edge_password(stack: Stack, cluster: str, name: str) -> tuple[str, str]:
    """The Edge Sync principal of ``cluster`` (named ``name``): its name, and a new password
    the test knows (the test plays the bootstrap script, which would deliver the real one)."""
    entry = status(stack.admin, cluster)
    assert entry is not None, f"{cluster} has no setup status"
    password = f"edge-{cluster[:8]}-pw"
    with ConfigStoreClient(stack.store.url, "admin", ADMIN_PASSWORD) as cs:
        cs.set_password(entry["sync"]["uuid"], password)
    return SYNC.principal_name(name), password


def store_token(store_url: str, name: str, password: str) -> str:
    """A Config Store Bearer token, as the client gets one (``POST /token``, Basic auth)."""
    r = requests.post(f"{store_url}/token", auth=(name, password), timeout=10)
    assert r.status_code == 200, r.text
    body = r.json()
    return str(body.get("token") or body["access_token"]) if isinstance(body, dict) else body


def tunnel_url(manager_url: str, cluster: str) -> str:
    return manager_url.replace("http", "ws", 1) + f"/v1/cluster/{cluster}/tunnel"


def open_tunnel(manager_url: str, cluster: str, token: str,
                timeout: float = 10) -> websocket.WebSocket:
    """The tunnel's WebSocket (``websocket.WebSocketBadStatusException`` if refused)."""
    ws = websocket.create_connection(tunnel_url(manager_url, cluster), timeout=timeout,
                                     header=[f"Authorization: Bearer {token}"])
    ws.settimeout(None)
    return ws


class StandInEdge:
    """One connected edge: its WebSocket, its Mux, what it received."""

    def __init__(self, manager_url: str, cluster: str, token: str) -> None:
        self.cluster = cluster
        self.ws = open_tunnel(manager_url, cluster, token)
        self.seen: list[Seen] = []
        self.arrived: queue.Queue[Seen] = queue.Queue()
        self.gate = threading.Event()
        """Lets a ``/stream`` answer go on past its first line."""
        self.mux = Mux(ClientWebSocketTransport(self.ws), client=False, on_stream=self._serve)
        self.reader = threading.Thread(target=self.mux.run, daemon=True)
        self.reader.start()

    # -- the test's side ---------------------------------------------------------------------
    def next(self, timeout: float = 10) -> Seen:
        """The next request to arrive."""
        return self.arrived.get(timeout=timeout)

    def drain(self) -> list[Seen]:
        """What arrived and was not yet taken by :meth:`next`."""
        found = []
        with contextlib.suppress(queue.Empty):
            while True:
                found.append(self.arrived.get_nowait())
        return found

    def drop(self) -> None:
        """Cut the WebSocket's TCP connection (no close frame), as a dying edge would."""
        _cut(self.ws)
        self.mux.close()
        self.reader.join(5)

    # -- the edge's side ---------------------------------------------------------------------
    def _serve(self, stream: Stream) -> None:
        request = wire.parse_request(stream.headers)
        seen = Seen(request, list(stream.headers))
        self.seen.append(seen)
        target = urlsplit(request.path)
        query = {k: v[0] for k, v in parse_qs(target.query).items()}
        first = target.path.strip("/").split("/", 1)[0]
        try:
            if request.upgrade:
                self.arrived.put(seen)
                _upgraded(stream, request)
            elif first == "hang":
                seen.body = _body(stream)
                self.arrived.put(seen)
                _wait_for_reset(stream)
            else:
                seen.body = _body(stream)
                self.arrived.put(seen)
                if first == "stream":
                    self._stream(stream)
                elif first == "sized":
                    _sized(stream, int(query.get("size", "100000")),
                           float(query.get("pause", "0")))
                elif first in ("tick", "flood"):
                    _endless(stream, float(query.get("gap", "0.2")) if first == "tick" else 0)
                else:
                    _echo(stream, seen)
        finally:
            if stream.reset_by_peer:
                seen.reset.set()

    def _stream(self, stream: Stream) -> None:
        stream.respond(200, [("content-type", "application/json")])
        stream.write(b'{"type":"ADDED","n":1}\n')
        self.gate.wait(10)
        stream.write(b'{"type":"ADDED","n":2}\n')
        stream.end()


def _cut(ws: websocket.WebSocket) -> None:
    """Shut the socket down first: a close alone sends nothing while the reader waits in it."""
    if ws.sock is not None:
        with contextlib.suppress(OSError):
            ws.sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError, websocket.WebSocketException):
        ws.shutdown()


def _body(stream: Stream) -> bytes:
    parts = []
    while chunk := stream.read(10):
        parts.append(chunk)
    return b"".join(parts)


def _echo(stream: Stream, seen: Seen) -> None:
    """The request as JSON; the status asked for in ``x-edge-status`` (200)."""
    request = seen.request
    body = json.dumps({"method": request.method, "path": request.path,
                       "level": request.level, "principal": request.principal,
                       "headers": dict(request.headers),
                       "body": seen.body.decode("utf-8", "replace")}).encode()
    status = int(dict(request.headers).get("x-edge-status", "200"))
    head = [("content-type", "application/json"), ("content-length", str(len(body))),
            ("x-edge", "echo")]
    if request.method == "HEAD":  # the length a GET would have, and no body (HTTP/2 checks)
        stream.respond(status, head, end=True)
        return
    stream.answer(status, head, body)  # head, body and end at once, as Edge Sync sends them


def _endless(stream: Stream, gap: float) -> None:
    stream.respond(200, [("content-type", "application/octet-stream")])
    n = 0
    with contextlib.suppress(StreamClosed):
        while not stream.reset_by_peer:
            n += 1
            if gap:
                stream.write(f'{{"tick":{n}}}\n'.encode(), 30)
                time.sleep(gap)
            else:
                stream.write(b"x" * FLOOD_CHUNK, 30)


def sized_body(size: int) -> bytes:
    """What ``/sized?size=<size>`` answers (bytes 0 to 255 over and over)."""
    return (bytes(range(256)) * (size // 256 + 1))[:size]


def _sized(stream: Stream, size: int, pause: float) -> None:
    body = sized_body(size)
    stream.respond(200, [("content-type", "application/octet-stream")])
    time.sleep(pause)
    with contextlib.suppress(StreamClosed):
        for start in range(0, size, 4096):
            stream.write(body[start:start + 4096], 30)
        stream.end()


def _wait_for_reset(stream: Stream) -> None:
    deadline = time.monotonic() + 60
    while not (stream.reset_by_peer or stream.mux.closed.is_set()) \
            and time.monotonic() < deadline:
        time.sleep(0.05)


def _upgraded(stream: Stream, request: wire.KubeRequest) -> None:
    """A 101 as an API server answers ``exec`` (WebSocket or SPDY), then an echo."""
    headers = [("Upgrade", request.upgrade or ""), ("X-Stream-Protocol-Version",
                                                    "v4.channel.k8s.io"), ("X-Edge", "101")]
    key = dict(request.headers).get("sec-websocket-key")
    if key:
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        headers.append(("Sec-WebSocket-Accept", accept))
    answer = wire.response_headers(101, headers)
    stream.respond(int(answer[0][1]), answer[1:])
    ticks = int(parse_qs(urlsplit(request.path).query).get("ticks", ["0"])[0])
    with contextlib.suppress(StreamClosed):
        for n in range(ticks):  # one way only: a line a 0.2 s, nothing read
            stream.write(f"tick {n}\n".encode())
            time.sleep(0.2)
        if ticks:
            stream.end()
            return
        while data := stream.read(30):
            stream.write(b"echo:" + data)
        stream.end()
