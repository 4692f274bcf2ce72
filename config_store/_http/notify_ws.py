"""The notify/v2 WebSocket transport around :class:`NotifySession`.

Before authentication the request's own thread alone reads and writes: the first message
must be ``Bearer <token>``, no bigger than ``auth_message_bytes`` and within
``auth_timeout``. After it, three threads share the connection, one job each: the session
(requests and events → updates in its outbox), the reader (client messages → the session;
pongs → the outbox) and the writer (outbox → socket, the only one writing; a ping every
``ping_interval``). A session ends with a close frame saying why (1008 and the reason; 1009
for a message over ``message_bytes``); a client that accepts nothing of a write for
``send_timeout`` is dropped. A client going away is an ordinary end: logged at DEBUG, never
as an error.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from dataclasses import dataclass, field

from flask import Blueprint, Flask, Response, current_app, jsonify, request
from wsproto.events import CloseConnection, Ping
from wsproto.utilities import LocalProtocolError

from serving import websocket_route
from serving.websocket import HandshakeFailed, MessageTooBig, WebSocket

from .._domain.notify import NotifyLimits, NotifyRegistry, NotifySession, SessionEnded
from .._domain.store import Store
from .auth import store

log = logging.getLogger(__name__)
bp = Blueprint("notify", __name__)
_BEARER = re.compile(r"^Bearer ([A-Za-z0-9+/=]+)$")
GONE = (OSError, LocalProtocolError)
"""What reading or writing raises once the client has gone (broken pipe, reset, timeout)."""

POLICY, TOO_BIG = 1008, 1009
CLOSE_WAIT_S = 2.0
"""How long to wait for the client's answer to our close frame."""


@dataclass(frozen=True)
class NotifySettings:
    """notify/v2 settings: the sessions' limits and the WebSocket's."""

    limits: NotifyLimits = field(default_factory=NotifyLimits)
    auth_timeout: float = 10.0
    """Seconds from the upgrade to the ``Bearer`` message."""
    auth_message_bytes: int = 4096
    """Largest first message (a token is 88 characters)."""
    message_bytes: int = 64 * 1024
    """Largest client message after authentication."""
    send_timeout: float = 30.0
    """Seconds a client may accept nothing of what is being written to it."""
    ping_interval: float = 25.0
    """Seconds between pings; a client silent for two intervals and more is dropped."""


def install_notify(app: Flask, store_: Store, settings: NotifySettings) -> None:
    """Serve notify/v2 in ``app`` with ``settings``."""
    app.extensions["notify"] = (settings, NotifyRegistry(store_.core.sessions,
                                                         settings.limits.max_connections))
    app.register_blueprint(bp)


@bp.get("/notify/v2")
def not_upgraded() -> tuple[Response, int]:
    """A plain GET: the endpoint only speaks WebSocket."""
    return websocket_route.not_upgraded()


@bp.route("/notify/v2", websocket=True)
def notify() -> Response | tuple[Response, int]:
    """Authenticate with ``Bearer <token>``, then serve subscriptions until closed."""
    try:
        ws = WebSocket.accept(request.environ, list(request.headers.items()), request.path)
    except HandshakeFailed as exc:
        return jsonify({"error": f"notify/v2: {exc}"}), 400
    try:
        _serve(ws, *current_app.extensions["notify"])
    except GONE as exc:
        log.debug("notify client went away: %s", _describe(exc))
    except Exception:  # the socket is no longer HTTP: no error response can follow
        log.exception("notify session failed")
    finally:
        ws.shutdown()
    return websocket_route.WebSocketDone()


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _authenticate(ws: WebSocket, settings: NotifySettings) -> tuple[str, str] | None:
    """``(principal, token)`` from the first message, or None once answered and closed."""
    try:
        first = ws.receive(settings.auth_message_bytes, timeout=settings.auth_timeout)
    except MessageTooBig as exc:
        ws.close(TOO_BIG, f"notify: first message over {exc.limit} bytes")
        return None
    except TimeoutError:
        ws.close(POLICY, f"notify: no Bearer token within {settings.auth_timeout:g} s")
        return None
    ws.sock.settimeout(settings.send_timeout)
    if first is None:
        ws.close(1000, "")  # the echo of the client's close frame, if it sent one
        return None
    match = _BEARER.match(first) if isinstance(first, str) else None
    if match is None:
        ws.send_text("400")
        ws.close(POLICY, "notify: the first message must be 'Bearer <token>'")
        return None
    principal = store().core.sessions.token_principal(match[1])
    if principal is None:
        ws.send_text("401")
        ws.close(POLICY, "notify: unknown or expired token")
        return None
    return principal, match[1]


def _serve(ws: WebSocket, settings: NotifySettings, registry: NotifyRegistry) -> None:
    found = _authenticate(ws, settings)
    if found is None:
        return
    session = NotifySession(store(), *found, settings.limits)
    if not registry.admit(session):
        ws.send_text("429")
        ws.close(POLICY, "notify: too many connections for this principal "
                         f"(max {registry.max_connections})")
        return
    try:
        ws.send_text("200")
        _run(ws, session, settings)
    finally:
        registry.leave(session)


def _run(ws: WebSocket, session: NotifySession, settings: NotifySettings) -> None:
    """Run the session with its reader and writer threads until one of them ends it."""
    ws.on_control = session.outbox.put_control
    writer = threading.Thread(target=_write, args=(ws, session, settings),
                              daemon=True, name="notify-writer")
    reader = threading.Thread(target=_read, args=(ws, session, settings),
                              daemon=True, name="notify-reader")
    writer.start()
    reader.start()
    code, reason = 1000, ""
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
            if time.monotonic() >= next_ping:
                next_ping = time.monotonic() + settings.ping_interval
                if ws.peer_close is None:
                    ws.send(Ping())
            if item is None:
                continue
            if isinstance(item, str):
                ws.send_text(item)
                continue
            ws.send(item)  # type: ignore[arg-type]
            if isinstance(item, CloseConnection):
                ws.shutdown(socket.SHUT_WR)
                return
    except GONE as exc:
        log.debug("notify: writing to the client failed: %s", _describe(exc))
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
        log.debug("notify client went away: %s", _describe(exc))
    finally:
        session.stop()
