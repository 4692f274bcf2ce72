"""Each edge's Kubernetes API from the centre: the tunnel Edge Sync opens, and the proxy.

``GET /v1/cluster/<c>/tunnel`` is the WebSocket only the cluster's Edge Sync may open.
``/v1/cluster/<c>/kube/<path>`` forwards a Kubernetes API request over that tunnel, as the
highest level (view, edit, admin) the caller is granted on the cluster: plain requests,
streamed answers (watches, ``logs -f``) and upgrades (``exec``, ``attach``,
``port-forward``). Each request is one audit row: principal, cluster, level, verb and path,
never a body or a query.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from flask import Blueprint, Response, g, jsonify, request
from werkzeug.exceptions import NotFound

from fplus.config_store import uuids
from fplus.config_store.client import Caller
from fplus.serving.http.limits import body_limit
from fplus.serving.http.websocket_route import WebSocketDone, not_upgraded, serve_websocket
from fplus.tunnel import wire
from fplus.tunnel.mux import Stream, StreamClosed

from ..audit import Entry
from ..model.apps_and_roles import STATUS_APP, SYNC
from ..model.setup_status import SetupStatus
from ..services.errors import Forbidden
from ..tunnel.bounds import MAX_BODY_BYTES, Refused, TunnelLimits
from ..tunnel.request_clock import Session
from ..tunnel.routing import NoTunnel, Sent, TunnelService
from ..tunnel.websocket_transport import WebSocketTransport
from .context import caller, services

bp = Blueprint("kube", __name__)
log = logging.getLogger(__name__)
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
LEVELS = (("admin", uuids.EdgePerm.KubeAdmin), ("edit", uuids.EdgePerm.KubeEdit),
          ("view", uuids.EdgePerm.KubeView))
"""The levels a grant gives, highest first."""
VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
         "DELETE": "delete", "OPTIONS": "options"}
STREAMS = frozenset({"exec", "attach", "portforward", "proxy"})
READ = 64 * 1024


def _tunnels() -> TunnelService:
    found = services().tunnels
    if found is None:
        raise NotFound("this Cluster Manager serves no edge tunnels")
    return found


@bp.get("/v1/cluster/<cluster:cluster>/tunnel")
@bp.get("/v1/cluster/<cluster:cluster>/tunnel", websocket=True)  # werkzeug: 400 otherwise
def tunnel(cluster: str) -> Response | tuple[Response, int]:
    """The WebSocket an edge's Edge Sync keeps open (its own cluster's only)."""
    tunnels = _tunnels()
    who = caller()
    if not _is_edge_sync(cluster, who):
        raise Forbidden("only the cluster's own Edge Sync may open its tunnel")
    if "websocket" not in request.headers.get("Upgrade", "").lower():
        return not_upgraded()
    return serve_websocket(lambda ws: tunnels.serve_edge(cluster, WebSocketTransport(ws)))


def _is_edge_sync(cluster: str, who: Caller) -> bool:
    """Whether ``who`` is the cluster's Edge Sync (a function of its own: the status entry
    read is not held for the tunnel's life)."""
    setup = SetupStatus.parse(services().cs.get_config(STATUS_APP, cluster))
    return setup.exists and setup.account(SYNC).uuid == who.uuid


@bp.route("/v1/cluster/<cluster:cluster>/kube/<path:path>", methods=METHODS)
@bp.get("/v1/cluster/<cluster:cluster>/kube/<path:path>", websocket=True)  # exec, attach
@body_limit(MAX_BODY_BYTES)  # the door; --tunnel-max-body-bytes is checked by the route
def kube(cluster: str, path: str) -> Response | tuple[Response, int]:
    """A Kubernetes API request to the cluster's edge."""
    tunnels = _tunnels()
    who = caller()
    level = next((name for name, perm in LEVELS
                  if services().access.allowed(who, perm, cluster)), None)
    upgrade = _upgrade()
    verb = _verb(path, upgrade)
    if level is None:
        _audit(who, cluster, "none", verb, path, 403)
        raise Forbidden("you may not reach this cluster's Kubernetes API (a view, edit or "
                        "admin grant on it, or on every cluster, is needed)")
    headers = wire.request_headers(request.method, _target(path), request.headers.items(),
                                   level=level,
                                   principal=who.name or who.uuid, upgrade=upgrade)
    limits = tunnels.limits
    try:
        _check_length(limits)
        sent = tunnels.request(cluster, headers, who.name or who.uuid,
                               end=not upgrade and not _has_body())
    except Refused as exc:
        _audit(who, cluster, level, verb, path, exc.status)
        return _refused(exc)
    try:
        status, answer = _send(sent, limits, upgrade, cluster)
    except Refused as exc:
        sent.close()
        _audit(who, cluster, level, verb, path, exc.status)
        return _refused(exc)
    except BaseException:  # the client went while sending its body: nothing holds a count
        sent.close()
        raise
    if status == 101:
        _audit(who, cluster, level, verb, path, status)
        _switch(sent, answer, limits)
        return WebSocketDone()
    whole = None if limits.stream_bytes_per_second else sent.stream.received_whole()
    if whole is not None:  # the edge answered in full already (most GETs): no streaming
        sent.close()
        resp = Response(whole, status=status, headers=answer)
        # its row is written once the answer went (before the connection's next request):
        # the caller does not wait for it
        resp.call_on_close(_audit_later(who, cluster, level, verb, path, status))
        return resp
    _audit(who, cluster, level, verb, path, status)
    resp = Response(_answer(sent, limits, _client_socket()), status=status, headers=answer,
                    direct_passthrough=True)
    resp.call_on_close(sent.close)  # also when the answer is never iterated
    return resp


def _upgrade() -> str | None:
    connection = {t.strip().lower() for t in request.headers.get("Connection", "").split(",")}
    return request.headers.get("Upgrade") if "upgrade" in connection else None


def _target(path: str) -> str:
    """The path and query for the edge as the caller sent them, undecoded (``%2F`` stays
    inside its segment); rebuilt from the decoded path where the raw one is not known."""
    raw = request.environ.get("RAW_URI") or ""
    head, mark, query = raw.partition("?")
    parts = head.split("/", 5)  # "", "v1", "cluster", the cluster, "kube", the rest
    if len(parts) == 6 and parts[:3] == ["", "v1", "cluster"] and parts[4] == "kube":
        return f"/{parts[5]}{mark}{query}"
    query = request.query_string.decode("latin-1")
    return f"/{path}" + (f"?{query}" if query else "")


def _has_body() -> bool:
    """Whether the request carries a body (a length over 0, or chunked)."""
    return bool(request.content_length) or "chunked" in request.headers.get(
        "Transfer-Encoding", "").lower()


def _verb(path: str, upgrade: str | None) -> str:
    if upgrade:
        last = path.rstrip("/").rsplit("/", 1)[-1]
        return last if last in STREAMS else "connect"
    if request.method == "GET" and request.args.get("watch") in ("true", "1"):
        return "watch"
    return VERBS.get(request.method, request.method.lower())


def _check_length(limits: TunnelLimits) -> None:
    length = request.content_length
    if length is not None and length > limits.max_body_bytes:
        raise Refused(413, f"request body over {limits.max_body_bytes} bytes "
                           "(--tunnel-max-body-bytes)", "tunnel-max-body-bytes")


def _send(sent: Sent, limits: TunnelLimits, upgrade: str | None,
          cluster: str) -> tuple[int, Any]:
    """Send the body (none for an upgrade) and wait for the answer's head."""
    stream = sent.stream
    try:
        if not upgrade and not stream.local_ended:
            size, body = 0, request.stream
            while chunk := body.read(READ):
                size += len(chunk)
                if size > limits.max_body_bytes:
                    raise Refused(413, f"request body over {limits.max_body_bytes} bytes "
                                       "(--tunnel-max-body-bytes)", "tunnel-max-body-bytes")
                stream.write(chunk, limits.idle_timeout)
            stream.end()
        return wire.parse_response(*stream.response(limits.idle_timeout))
    except TimeoutError:
        raise Refused(408, f"the edge did not answer within {limits.idle_timeout:g} s "
                           "(--tunnel-idle-timeout)", "tunnel-idle-timeout") from None
    except StreamClosed:
        if stream.mux.closed.is_set():  # the tunnel (or the relay to it) went meanwhile
            sent.lost()
            raise NoTunnel(cluster, time.time()) from None
        raise Refused(502, "the edge ended the request before answering") from None


def _client_socket() -> socket.socket | None:
    sock: socket.socket | None = request.environ.get("gunicorn.socket")
    return sock


def _cut(sent: Sent, sock: socket.socket | None) -> None:
    """End a request the session's bounds ended: the stream reset and its count ended, the
    client cut off."""
    sent.close()
    if sock is None:
        return
    # Shut the connection down through a duplicate of the socket: a write or read waiting on
    # ``sock`` then fails as a dropped client's would (EPIPE, end of file), where gevent's own
    # shutdown of ``sock`` fails it with EBADF, which gunicorn logs as an error.
    with contextlib.suppress(OSError):
        twin = socket.fromfd(sock.fileno(), sock.family, sock.type)
        try:
            twin.shutdown(socket.SHUT_RDWR)
        finally:
            twin.close()


def _received(stream: Stream, session: Session) -> Iterator[bytes]:
    """``stream``'s data as it arrives, until it ends or ``session`` expired (the expiry
    resets the stream, which wakes a read waiting on it)."""
    while session.expired is None and (chunk := stream.read()):
        yield chunk


def _answer(sent: Sent, limits: TunnelLimits, sock: socket.socket | None) -> Iterator[bytes]:
    """The answer's body as it arrives, paced, cut by the session's bounds (it runs after
    the request's context is gone: ``sock`` is the client's, taken before)."""
    session = Session(limits, lambda setting: _cut(sent, sock))
    try:
        for chunk in _received(sent.stream, session):
            session.moved(len(chunk), paced=True)
            yield chunk
    except StreamClosed:
        return
    finally:
        session.close()
        sent.close()


def _switch(sent: Sent, answer: Any, limits: TunnelLimits) -> None:
    """A 101: the client's socket and the stream carry each other's bytes until one ends."""
    sock = _client_socket()
    if sock is None:
        sent.close()
        return
    head = "HTTP/1.1 101 Switching Protocols\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in answer) + "\r\n"
    session = Session(limits, lambda setting: _cut(sent, sock))
    stream = sent.stream

    def upload() -> None:
        try:
            while data := sock.recv(READ):
                session.moved(len(data))
                stream.write(data, limits.idle_timeout)
            stream.end()
        except (OSError, StreamClosed, TimeoutError):
            stream.reset()

    try:
        sock.sendall(head.encode("latin-1"))
        uploader = threading.Thread(target=upload, daemon=True)
        uploader.start()
        for chunk in _received(stream, session):
            session.moved(len(chunk), paced=True)
            sock.sendall(chunk)
    except (OSError, StreamClosed):
        pass
    finally:
        session.close()
        _cut(sent, sock)  # the stream reset, its count ended, the client cut off


def _refused(exc: Refused) -> tuple[Response, int]:
    resp = jsonify(exc.body())
    if exc.retry_after is not None:
        resp.headers["Retry-After"] = str(exc.retry_after)
    return resp, exc.status


def _audit(who: Caller, cluster: str, level: str, verb: str, path: str, status: int) -> None:
    """One row per request: never its body or its query."""
    _audit_later(who, cluster, level, verb, path, status)()


def _audit_later(who: Caller, cluster: str, level: str, verb: str, path: str,
                 status: int) -> Callable[[], None]:
    """What writes the request's row (callable once the request's context is gone)."""
    audit = services().audit
    entry = Entry(g.get("request_id") or "", who.uuid, who.name, f"kube.{verb}", "kube",
                  cluster, f"/{path}"[:512], cluster, status, level)

    def write() -> None:
        if audit is None:
            return
        try:
            audit.record(entry)
        except Exception:  # the request goes on: say so loudly
            log.exception("audit: could not record a Kubernetes request to %s", cluster)
    return write
