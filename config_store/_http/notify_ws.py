"""The notify/v2 WebSocket transport around :class:`NotifySession`.

A client going away (closing, resetting the connection, or vanishing while updates are being
sent) is an ordinary end of a session: logged at DEBUG, never as an error.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading

from flask import Blueprint, Response, current_app, jsonify
from flask_sock import Sock
from simple_websocket import ConnectionClosed

from .._domain.notify import NotifySession, SessionError
from .auth import store

log = logging.getLogger(__name__)
bp = Blueprint("notify", __name__)
sock = Sock()
_BEARER = re.compile(r"^Bearer ([A-Za-z0-9+/=]+)$")
GONE = (ConnectionClosed, OSError)
"""What sending or receiving raises once the client has gone (OSError: broken pipe, reset)."""


@bp.get("/notify/v2")
def not_upgraded() -> tuple[Response, int]:
    """A plain GET: the endpoint only speaks WebSocket."""
    return jsonify({"error": "notify/v2 is a WebSocket endpoint"}), 426


@sock.route("/notify/v2", bp=bp)
def notify(ws) -> None:
    """Authenticate with ``Bearer <token>``, then serve subscriptions until closed."""
    try:
        _serve(ws)
    except GONE as exc:
        log.debug("notify client went away: %s", _describe(exc))
    finally:
        with contextlib.suppress(*GONE):
            ws.close()


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _serve(ws) -> None:
    first = ws.receive(timeout=30)
    match = _BEARER.match(first) if isinstance(first, str) else None
    if match is None:
        ws.send("400")
        return
    principal = store().core.sessions.token_principal(match[1])
    if principal is None:
        ws.send("401")
        return
    ws.send("200")
    send_lock = threading.Lock()

    def send(update: dict) -> None:
        with send_lock:
            ws.send(json.dumps(update))

    session = NotifySession(store(), principal, send)
    app = current_app._get_current_object()
    reader = threading.Thread(target=_read, args=(ws, session, app), daemon=True,
                              name="notify-reader")
    reader.start()
    try:
        session.run()
    except SessionError as exc:
        log.info("notify session ended: %s", exc)


def _read(ws, session: NotifySession, app) -> None:
    try:
        while True:
            message = ws.receive()
            if message is None:
                break
            if not isinstance(message, str):
                ws.send("400")
                break
            session.submit(message)
    except GONE as exc:
        log.debug("notify client went away: %s", _describe(exc))
    finally:
        session.stop()
