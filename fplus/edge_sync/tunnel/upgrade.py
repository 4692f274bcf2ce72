"""An upgrade (``exec``, ``attach``, ``port-forward``, ``logs -f`` over WebSocket or SPDY)
through the tunnel: a connection of its own to the API server, the HTTP/1.1 request written
and its answer read with h11; after a 101 the raw bytes are pumped both ways until either side
ends. Any other answer is relayed as a plain response."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading

import h11

from fplus.tunnel.mux import Stream, StreamClosed
from fplus.tunnel.wire import KubeRequest

from .apiserver import ApiServer
from .replies import decoded, fail, reply

log = logging.getLogger(__name__)

CHUNK = 64 * 1024
MAX_HEAD = 64 * 1024
"""The largest response head accepted from the API server."""
HEAD_TIMEOUT = 60.0
"""Seconds the API server may take to answer an upgrade (it may dial a kubelet first)."""
POLL = 0.5
"""How often the client-to-server pump looks whether the other direction ended."""


class _Upstream(Exception):
    """The API server could not be reached, or broke off."""


def forward_upgrade(api: ApiServer, stream: Stream, request: KubeRequest) -> None:
    """Forward one upgrade request on ``stream`` and, granted, its byte streams."""
    assert request.upgrade
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
    headers = [(k, v) for k, v in api.headers_for(request) if k.lower() != "content-length"]
    headers += [("Host", api.authority), ("Connection", "Upgrade"),
                ("Upgrade", request.upgrade)]
    try:
        head = conn.send(h11.Request(method=request.method, target=api.target(request),
                                     headers=headers))
        head = (head or b"") + (conn.send(h11.EndOfMessage()) or b"")
    except h11.LocalProtocolError as exc:
        fail(stream, 400, "BadRequest", f"a request the edge cannot forward: {exc}")
        return
    try:
        sock = api.open_socket()
    except OSError as exc:
        fail(stream, 502, "BadGateway", f"the edge's Kubernetes API server is unreachable: "
                                        f"{type(exc).__name__}")
        return
    answered = False
    try:
        sock.sendall(head)
        sock.settimeout(HEAD_TIMEOUT)
        event = _next(conn, sock)
        while isinstance(event, h11.InformationalResponse) and event.status_code != 101:
            event = _next(conn, sock)  # a 100 Continue
        if not isinstance(event, h11.InformationalResponse | h11.Response):
            raise _Upstream(f"the API server answered {type(event).__name__}")
        reply(stream, event.status_code, decoded(event.headers))
        answered = True
        sock.settimeout(None)
        if isinstance(event, h11.InformationalResponse):
            leftover, _ = conn.trailing_data
            _pump(stream, sock, leftover)
        else:
            _relay_body(conn, sock, stream)
    except (_Upstream, OSError, h11.RemoteProtocolError) as exc:
        if answered:
            stream.reset()
        else:
            fail(stream, 502, "BadGateway", f"the edge's Kubernetes API server did not answer "
                                            f"the upgrade: {_describe(exc)}")
    finally:
        _shut(sock)
        sock.close()


def _next(conn: h11.Connection, sock: socket.socket) -> object:
    """The next h11 event, reading the socket as needed."""
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(sock.recv(CHUNK))


def _relay_body(conn: h11.Connection, sock: socket.socket, stream: Stream) -> None:
    """An answer other than 101: its body, then the end."""
    while True:
        event = _next(conn, sock)
        if isinstance(event, h11.Data):
            stream.write(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            stream.end()
            return
        else:
            raise _Upstream(f"the API server's answer broke off ({type(event).__name__})")


def _pump(stream: Stream, sock: socket.socket, leftover: bytes) -> None:
    """Bytes both ways until either side ends (or resets); then both are closed. A side
    that ended cleanly ends the stream cleanly; a broken one resets it."""
    done = threading.Event()
    clean: list[bool] = []

    def server_to_client() -> None:
        try:
            if leftover:
                stream.write(leftover)
            while data := sock.recv(CHUNK):
                stream.write(data)
            clean.append(True)
        except (OSError, StreamClosed):
            pass
        finally:
            done.set()
            _shut(sock)

    upstream = threading.Thread(target=server_to_client, name="tunnel-upgrade", daemon=True)
    upstream.start()
    try:
        while not done.is_set():
            try:
                data = stream.read(timeout=POLL)
            except TimeoutError:
                continue
            if not data:
                clean.append(True)  # the client is done: so is the connection
                break
            sock.sendall(data)
    except (OSError, StreamClosed):
        pass
    finally:
        _shut(sock)
        upstream.join()
    if clean:
        with contextlib.suppress(StreamClosed):
            stream.end()


def _shut(sock: socket.socket) -> None:
    """Shut the connection both ways, waking a thread blocked on it (the socket's own
    ``shutdown``: a TLS socket's would drop its TLS state under a reading thread)."""
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
