"""The notify/v2 WebSocket transport around :class:`NotifySession`.

Before authentication the request's own thread alone reads and writes: the first message
must be ``Bearer <token>``, no bigger than ``auth_message_bytes`` and within
``auth_timeout``. After it, three threads share the connection, one job each: the session
(requests and events → updates in its outbox), the reader (client messages → the session;
pongs → the outbox) and the writer (outbox → socket; a ping every ``ping_interval``). An
update that finds the writer idle and nothing queued is written by the session at once, as
far as the socket takes it without waiting (the outbox sees that one writes at a time); the
writer writes the rest, and whatever queues behind a client that does not keep up. A
session ends with a close frame saying why (1008 and the reason; 1009 for a message over
``message_bytes``); a client that accepts nothing of a write for ``send_timeout`` is
dropped. A client going away is an ordinary end: logged at DEBUG, never as an error.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from flask import Blueprint, Flask, Response, current_app
from wsproto.events import CloseConnection, Ping

from fplus.serving.http import websocket_route
from fplus.serving.http.websocket import GONE, MessageTooBig, WebSocket, describe
from fplus.serving.notify.bearer import (
    CLOSE_WAIT_S,
    SocketSettings,
    accept,
    read_bearer,
    refuse_crowded,
    refuse_unknown,
)
from fplus.serving.notify.wire import NORMAL, PATH, POLICY, TOO_BIG

from .._domain.notify import NotifyLimits, NotifyRegistry, NotifySession, SessionEnded
from .._domain.notify.outbox import Bytes
from .._domain.store import Store
from .auth import store

log = logging.getLogger(__name__)
bp = Blueprint("notify", __name__)
IOV_MAX = 512
"""Buffers offered to one ``sendmsg`` at most (the system's limit is 1024)."""


@dataclass(frozen=True)
class NotifySettings(SocketSettings):
    """notify/v2 settings: the WebSocket's, and the sessions' limits."""

    limits: NotifyLimits = field(default_factory=NotifyLimits)


def install_notify(app: Flask, store_: Store, settings: NotifySettings) -> None:
    """Serve notify/v2 in ``app`` with ``settings``."""
    app.extensions["notify"] = (settings, NotifyRegistry(store_.core.sessions,
                                                         settings.limits.max_connections))
    app.register_blueprint(bp)


@bp.get(PATH)
def not_upgraded() -> tuple[Response, int]:
    """A plain GET: the endpoint only speaks WebSocket."""
    return websocket_route.not_upgraded()


@bp.route(PATH, websocket=True)
def notify() -> Response | tuple[Response, int]:
    """Authenticate with ``Bearer <token>``, then serve subscriptions until closed."""
    settings, registry = current_app.extensions["notify"]
    return websocket_route.serve_websocket(lambda ws: _serve(ws, settings, registry))


def _authenticate(ws: WebSocket, settings: NotifySettings) -> tuple[str, str] | None:
    """``(principal, token)`` from the first message, or None once answered and closed."""
    token = read_bearer(ws, settings.auth_message_bytes, settings.auth_timeout,
                        settings.send_timeout)
    if token is None:
        return None
    principal = store().core.sessions.token_principal(token)
    if principal is None:
        refuse_unknown(ws)
        return None
    return principal, token


def _serve(ws: WebSocket, settings: NotifySettings, registry: NotifyRegistry) -> None:
    found = _authenticate(ws, settings)
    if found is None:
        return
    session = NotifySession(store(), *found, settings.limits, registry.subscriptions)
    if not registry.admit(session):
        refuse_crowded(ws, registry.max_connections)
        return
    try:
        accept(ws)
        _run(ws, session, settings)
    finally:
        registry.leave(session)


def text_frame(payload: bytes) -> bytes:
    """An unmasked, unfragmented WebSocket text frame (RFC 6455 §5.2) of ASCII ``payload``:
    what wsproto writes for ``TextMessage``, without its per-message machinery."""
    size = len(payload)
    if size < 126:
        return b"".join((bytes((0x81, size)), payload))
    if size < 1 << 16:
        return b"".join((struct.pack("!BBH", 0x81, 126, size), payload))
    return b"".join((struct.pack("!BBQ", 0x81, 127, size), payload))


def _nowait(sock: socket.socket) -> Callable[[bytes], int]:
    """Write what ``sock`` takes of ``data`` at once; 0 if nothing (or the socket failed:
    the writer meets the failure on its next write and ends the connection). gevent's
    ``sendmsg`` returns at once with ``MSG_DONTWAIT``, whatever the socket's timeout."""
    def send(data: bytes) -> int:
        try:
            return sock.sendmsg((data,), (), socket.MSG_DONTWAIT)
        except OSError:
            return 0
    return send


def _tls(sock: socket.socket) -> bool:
    """True for a TLS socket (stdlib's or gevent's): it has no ``sendmsg``, and a write
    that takes part of a record must be repeated with the same bytes, so it is never written
    without waiting."""
    return hasattr(sock, "cipher")


def _write_all(sock: socket.socket, buffers: list[Bytes]) -> None:
    """Write ``buffers`` in order, as few system calls as the socket allows (it waits up to
    its timeout for the client to take something)."""
    if _tls(sock):
        sock.sendall(b"".join(buffers))
        return
    views = [memoryview(b) for b in buffers]
    while views:
        sent = sock.sendmsg(views[:IOV_MAX])
        while views and sent >= len(views[0]):
            sent -= len(views.pop(0))
        if sent:
            views[0] = views[0][sent:]


def _run(ws: WebSocket, session: NotifySession, settings: NotifySettings) -> None:
    """Run the session with its reader and writer threads until one of them ends it."""
    ws.on_control = session.outbox.put_control
    session.outbox.wire(text_frame, None if _tls(ws.sock) else _nowait(ws.sock))
    writer = threading.Thread(target=_write, args=(ws, session, settings),
                              daemon=True, name="notify-writer")
    reader = threading.Thread(target=_read, args=(ws, session, settings),
                              daemon=True, name="notify-reader")
    writer.start()
    reader.start()
    code, reason = NORMAL, ""
    try:
        session.run()
    except SessionEnded as exc:
        code, reason = POLICY, str(exc)
        log.info("notify session of %s ended: %s", session.principal, reason)
    finally:
        session.outbox.finish(ws.close_event(code, reason))
        writer.join(settings.send_timeout + 1)
        reader.join(CLOSE_WAIT_S)  # the client answers our close frame, or not


def _write(ws: WebSocket, session: NotifySession, settings: NotifySettings) -> None:
    """The connection's only writer: updates and control frames, and a ping every interval.
    Ends after the close frame, or drops the connection when a write fails or times out."""
    next_ping = time.monotonic() + settings.ping_interval
    try:
        while True:
            item = session.outbox.get(max(0.0, next_ping - time.monotonic()))
            if isinstance(item, list):
                _write_all(ws.sock, item)  # whole frames, or the rest of one
            elif item is not None:
                ws.send(item)  # type: ignore[arg-type]
                if isinstance(item, CloseConnection):
                    ws.shutdown(socket.SHUT_WR)
                    return
            if time.monotonic() >= next_ping:  # between frames
                next_ping = time.monotonic() + settings.ping_interval
                if ws.peer_close is None:
                    ws.send(Ping())
    except GONE as exc:
        log.debug("notify: writing to the client failed: %s", describe(exc))
        ws.shutdown()
        session.stop()


def _read(ws: WebSocket, session: NotifySession, settings: NotifySettings) -> None:
    """The connection's only reader: client messages to the session until the client closes,
    goes away, sends a message too big or stays silent for two ping intervals and more."""
    silence = 2 * settings.ping_interval + settings.send_timeout
    try:
        while True:
            try:
                message = ws.receive(settings.message_bytes)
            except TimeoutError:
                if time.monotonic() - ws.last_heard > silence:
                    log.debug("notify: client silent for %.0f s", silence)
                    break
                continue
            if message is None:
                break
            if not isinstance(message, str):
                session.outbox.finish(CloseConnection(
                    POLICY, "notify: requests are JSON text, not binary"))
                break
            session.submit(message)
    except MessageTooBig as exc:
        session.outbox.finish(CloseConnection(TOO_BIG, f"notify: message over {exc.limit} bytes"))
    except GONE as exc:
        log.debug("notify client went away: %s", describe(exc))
    finally:
        session.stop()
