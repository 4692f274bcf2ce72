"""The first message of a notify/v2 session on the server: ``Bearer <token>``
(:mod:`.wire`), read with a size limit and a deadline, and the answers to it."""

from __future__ import annotations

from dataclasses import dataclass

from ..http.websocket import MessageTooBig, WebSocket
from .wire import (
    AUTHENTICATED,
    BAD_FIRST_MESSAGE,
    BEARER,
    CROWDED,
    NORMAL,
    POLICY,
    TOO_BIG,
    UNKNOWN_TOKEN,
)

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
        ws.send_text(BAD_FIRST_MESSAGE)
        ws.close(POLICY, "notify: the first message must be 'Bearer <token>'")
        return None
    return match[1]


def refuse_unknown(ws: WebSocket) -> None:
    """Answer a token that proves nobody, and close."""
    ws.send_text(UNKNOWN_TOKEN)
    ws.close(POLICY, "notify: unknown or expired token")


def refuse_crowded(ws: WebSocket, most: int) -> None:
    """Answer a principal holding ``most`` connections already, and close."""
    ws.send_text(CROWDED)
    ws.close(POLICY, f"notify: too many connections for this principal (max {most})")


def accept(ws: WebSocket) -> None:
    """Answer an authenticated first message: the session begins."""
    ws.send_text(AUTHENTICATED)
