"""The WebSocket to the Cluster Manager that carries the tunnel's HTTP/2 bytes.

Edge Sync dials out (``GET <CLUSTER_MANAGER_URL>/v1/cluster/<uuid>/tunnel``, ``Authorization:
Bearer`` its own Config Store token) with websocket-client. Every message either way is
binary and holds some bytes of the HTTP/2 connection; how they are split means nothing.

Proxies: websocket-client itself reads ``https_proxy``/``HTTPS_PROXY`` for ``wss://``
(``http_proxy``/``HTTP_PROXY`` for ``ws://``), with the user and password of the proxy URL as
``Proxy-Authorization: Basic``, and skips hosts ``no_proxy``/``NO_PROXY`` names (``*``,
host names and their subdomains, IP addresses and CIDR networks); it tunnels with
``CONNECT``. The CA the Cluster Manager's certificate is checked against is the Config Store
client's: ``FPLUS_CA_FILE`` (else ``REQUESTS_CA_BUNDLE``/``SSL_CERT_FILE``, else the
system's).
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import threading
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

import websocket

PATH = "/v1/cluster/{uuid}/tunnel"
MESSAGE_BYTES = 64 * 1024
"""The most bytes one WebSocket message carries (a longer send is split)."""
MAX_RETRY_AFTER = 600.0
"""The longest ``Retry-After`` (seconds) obeyed: a wrong header cannot park the tunnel."""


def tunnel_url(manager_url: str, cluster_uuid: str) -> str:
    """``http[s]://cm[/prefix]`` → ``ws[s]://cm[/prefix]/v1/cluster/<uuid>/tunnel``."""
    base = manager_url.rstrip("/")
    for plain, secure in (("http://", "ws://"), ("https://", "wss://")):
        if base.startswith(plain):
            base = secure + base[len(plain):]
    return base + PATH.format(uuid=cluster_uuid)


def ca_bundle() -> str | None:
    """The PEM CA bundle the Cluster Manager's certificate is checked against, chosen as the
    Config Store client chooses it; None: the system's CAs."""
    return (os.environ.get("FPLUS_CA_FILE") or os.environ.get("REQUESTS_CA_BUNDLE")
            or os.environ.get("SSL_CERT_FILE") or None)


class Refused(Exception):
    """The Cluster Manager answered the handshake with ``status`` instead of 101."""

    def __init__(self, status: int, retry_after: float | None) -> None:
        super().__init__(f"the Cluster Manager answered {status}")
        self.status, self.retry_after = status, retry_after


def retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header (delay or HTTP date) asks for, at most
    :data:`MAX_RETRY_AFTER`; None without a readable one."""
    value = next((v for k, v in (headers or {}).items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - (now or time.time())
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def spread(delay: float) -> float:
    """``delay`` plus up to a quarter more, drawn at random: edges told the same
    ``Retry-After`` do not come back in the same instant."""
    return delay * (1 + 0.25 * random.random())  # noqa: S311 - spread, not secrecy


class WebSocketTransport:
    """One connected tunnel WebSocket as a :class:`fplus.tunnel.transport.Transport`.

    One thread receives, one sends; websocket-client answers the server's pings from the
    receiving thread, so every write goes through the WebSocket's own lock
    (``enable_multithread``) and never interleaves with ours.
    """

    def __init__(self, ws: websocket.WebSocket) -> None:
        self.ws = ws
        self._closed = threading.Event()

    @classmethod
    def connect(cls, url: str, token: str, *, timeout: float = 10.0) -> WebSocketTransport:
        """Open the WebSocket (``timeout`` for the connection and the handshake). Raises
        :class:`Refused` for an answer other than 101, ``websocket.WebSocketException`` or
        ``OSError`` when there is no answer."""
        bundle = ca_bundle()
        try:
            ws = websocket.create_connection(
                url, timeout=timeout, header=[f"Authorization: Bearer {token}"],
                sslopt={"ca_certs": bundle} if bundle else None, enable_multithread=True,
                skip_utf8_validation=True, suppress_origin=True)
        except websocket.WebSocketBadStatusException as exc:
            raise Refused(exc.status_code, retry_after(exc.resp_headers)) from None
        ws.settimeout(None)  # the session's watchdog notices silence, and closes
        return cls(ws)

    def send(self, data: bytes) -> None:
        """Send ``data`` as binary messages; ``OSError`` once the connection is gone."""
        view = memoryview(data)
        try:
            for start in range(0, len(view), MESSAGE_BYTES):
                self.ws.send_bytes(view[start:start + MESSAGE_BYTES].tobytes())
        except websocket.WebSocketException as exc:
            raise ConnectionError(f"the tunnel WebSocket is closed: {exc}") from exc

    def receive(self) -> bytes:
        """The next binary message's bytes; ``b""`` once the connection closed (a close
        frame, an error, a text message: the peer does not speak the tunnel)."""
        while not self._closed.is_set():
            try:
                opcode, data = self.ws.recv_data()
            except (websocket.WebSocketException, OSError, ValueError):
                return b""
            if opcode == websocket.ABNF.OPCODE_BINARY:
                if data:
                    return bytes(data)
                continue  # an empty message carries nothing, and is not the end
            return b""
        return b""

    def close(self) -> None:
        """Shut the socket at once (waking a blocked send or receive), then close it;
        idempotent and safe from any thread."""
        if self._closed.is_set():
            return
        self._closed.set()
        sock = self.ws.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)  # not the TLS layer's
            with contextlib.suppress(OSError):
                sock.close()
