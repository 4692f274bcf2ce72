"""The first message of a notify/v2 session: ``Bearer <token>`` (ACS
``docs/services/notify-v2.md``), read with a size limit and a deadline."""

from __future__ import annotations

import re
from dataclasses import dataclass

from wsproto.utilities import LocalProtocolError

from .websocket import MessageTooBig, WebSocket

BEARER = re.compile(r"^Bearer ([A-Za-z0-9+/=]+)$")
NORMAL, POLICY, TOO_BIG = 1000, 1008, 1009
"""WebSocket close codes: a normal end, a policy violation, a message too big."""
GONE = (OSError, LocalProtocolError)
"""What reading or writing raises once the client has gone (broken pipe, reset, timeout)."""
CLOSE_WAIT_S = 2.0
"""How long to wait for the client's answer to our close frame."""


@dataclass(frozen=True)
class SocketSettings:
    """A notify/v2 WebSocket's limits and rhythms, before and after authentication."""

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


def read_bearer(ws: WebSocket, max_bytes: int, timeout: float,
                send_timeout: float) -> str | None:
    """The token of the first message; None once the client was answered (``"400"`` for
    anything but ``Bearer <token>``) and the socket closed. After it, writes time out after
    ``send_timeout``."""
    try:
        first = ws.receive(max_bytes, timeout=timeout)
    except MessageTooBig as exc:
        ws.close(TOO_BIG, f"notify: first message over {exc.limit} bytes")
        return None
    except TimeoutError:
        ws.close(POLICY, f"notify: no Bearer token within {timeout:g} s")
        return None
    ws.sock.settimeout(send_timeout)
    if first is None:
        ws.close(NORMAL, "")  # the echo of the client's close frame, if it sent one
        return None
    match = BEARER.match(first) if isinstance(first, str) else None
    if match is None:
        ws.send_text("400")
        ws.close(POLICY, "notify: the first message must be 'Bearer <token>'")
        return None
    return match[1]


def describe(exc: BaseException) -> str:
    """``exc`` in a log line."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
