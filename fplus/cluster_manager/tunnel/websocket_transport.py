"""An edge's WebSocket (the server side, :mod:`fplus.serving.http.websocket`) as a tunnel
transport: binary messages, each some bytes of the HTTP/2 connection."""

from __future__ import annotations

import threading

from wsproto.events import BytesMessage, Event

from fplus.serving.http.websocket import GONE, MessageTooBig, WebSocket

MAX_MESSAGE = 1024 * 1024
"""The largest message an edge may send (Edge Sync sends at most a frame's worth)."""


class WebSocketTransport:
    """A :class:`~fplus.tunnel.transport.Transport` on an accepted WebSocket."""

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self._lock = threading.Lock()
        ws.on_control = self._control  # pongs from the reader, beside the writer's sends

    def send(self, data: bytes) -> None:
        with self._lock:
            self.ws.send(BytesMessage(data=data))

    def receive(self) -> bytes:
        try:
            message = self.ws.receive(MAX_MESSAGE)
        except (MessageTooBig, *GONE):
            return b""
        if not isinstance(message, bytes):  # closed, or text: not ours
            return b""
        return message

    def close(self) -> None:
        self.ws.shutdown()

    def _control(self, event: Event) -> None:
        with self._lock:
            self.ws.send(event)
