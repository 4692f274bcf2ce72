"""Helpers for the notify/v2 tests: a raw protocol client and callback recorders."""

from __future__ import annotations

import json
import queue
import time
import uuid as uuidlib
from collections.abc import Callable
from typing import Any

import websocket

from harness.servers import Api

RECV_TIMEOUT = 5.0
"""How long to wait for an update that must arrive."""

QUIET = 0.5
"""How long to listen when asserting that nothing arrives."""


def ws_url(base_url: str) -> str:
    """``http://host:port`` → ``ws://host:port/notify/v2``."""
    return "ws://" + base_url.removeprefix("http://").rstrip("/") + "/notify/v2"


def get_token(api: Api) -> str:
    """A Bearer token for ``api``'s principal, from ``POST /token`` (HTTP Basic)."""
    r = api.post("/token")
    assert r.status_code == 200, r.text
    body = r.json()
    assert isinstance(body["token"], str) and body["token"]
    assert "expiry" in body
    return body["token"]


def open_socket(base_url: str) -> websocket.WebSocket:
    """An unauthenticated WebSocket to the notify endpoint (UTF-8 left to the JSON decoder:
    websocket-client's own check is pure Python, ~1 s per MB)."""
    return websocket.create_connection(ws_url(base_url), timeout=RECV_TIMEOUT,
                                       skip_utf8_validation=True)


def handshake(base_url: str, first_message: str) -> tuple[websocket.WebSocket, str]:
    """Connect, send ``first_message`` and return the socket and the server's answer."""
    ws = open_socket(base_url)
    ws.send(first_message)
    return ws, ws.recv()


def read_close(ws: websocket.WebSocket, timeout: float = RECV_TIMEOUT) -> tuple[int | None, str]:
    """Read (and drop) messages until the server's close frame: its code and reason.

    ``(None, "")`` if the connection ends without one; AssertionError if it stays open.
    """
    ws.settimeout(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            opcode, data = ws.recv_data()
        except websocket.WebSocketTimeoutException:
            break
        except (websocket.WebSocketConnectionClosedException, OSError):
            return None, ""
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            if len(data) < 2:
                return None, ""
            return int.from_bytes(data[:2], "big"), data[2:].decode()
    raise AssertionError(f"the server did not close the connection within {timeout}s")


def entry_url(app: str, obj: str) -> str:
    """The relative notify URL of one config entry."""
    return f"v2/app/{app}/object/{obj}"


def app_parent(app: str) -> str:
    """The SEARCH parent (and app-list WATCH URL) of ``app``."""
    return f"v2/app/{app}/object/"


class RawNotify:
    """A hand-driven notify/v2 session speaking the wire protocol directly."""

    def __init__(self, base_url: str, token: str) -> None:
        self.ws, answer = handshake(base_url, f"Bearer {token}")
        assert answer == "200", answer
        self._pending: list[dict[str, Any]] = []

    @classmethod
    def login(cls, api: Api) -> RawNotify:
        """Connect and authenticate as ``api``'s principal."""
        return cls(api.base, get_token(api))

    def close(self) -> None:
        self.ws.close()

    def __enter__(self) -> RawNotify:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests -------------------------------------------------------------

    def send(self, request: dict[str, Any] | str) -> None:
        """Send one request (a dict is JSON-encoded, a str goes as is)."""
        self.ws.send(request if isinstance(request, str) else json.dumps(request))

    def watch(self, url: str, **extra: Any) -> str:
        """Send a WATCH of ``url``; returns the subscription uuid."""
        sub = str(uuidlib.uuid4())
        self.send({"uuid": sub, "method": "WATCH", "request": {"url": url, **extra}})
        return sub

    def search(self, parent: str, flt: Any = None) -> str:
        """Send a SEARCH of ``parent``; returns the subscription uuid."""
        sub = str(uuidlib.uuid4())
        request: dict[str, Any] = {"uuid": sub, "method": "SEARCH", "parent": parent}
        if flt is not None:
            request["filter"] = flt
        self.send(request)
        return sub

    def close_sub(self, sub: str) -> None:
        """Send CLOSE for ``sub``."""
        self.send({"uuid": sub, "method": "CLOSE"})

    # -- updates --------------------------------------------------------------

    def _recv(self, timeout: float) -> dict[str, Any]:
        self.ws.settimeout(timeout)
        text = self.ws.recv()
        assert isinstance(text, str) and text, f"expected a JSON update, got {text!r}"
        msg = json.loads(text)
        assert isinstance(msg, dict), msg
        return msg

    def next(self, sub: str, timeout: float = RECV_TIMEOUT) -> dict[str, Any]:
        """The next update of ``sub`` (updates of other subscriptions are kept)."""
        for i, msg in enumerate(self._pending):
            if msg.get("uuid") == sub:
                return self._pending.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no update for {sub} within {timeout}s")
            try:
                msg = self._recv(left)
            except websocket.WebSocketTimeoutException:
                raise AssertionError(f"no update for {sub} within {timeout}s") from None
            if msg.get("uuid") == sub:
                return msg
            self._pending.append(msg)

    def assert_quiet(self, sub: str | None = None, timeout: float = QUIET) -> None:
        """Assert that no update (of ``sub``, or of any subscription) arrives."""
        unexpected = [m for m in self._pending if sub is None or m.get("uuid") == sub]
        assert not unexpected, unexpected
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = self._recv(left)
            except websocket.WebSocketTimeoutException:
                return
            assert sub is not None and msg.get("uuid") != sub, f"unexpected update {msg}"
            self._pending.append(msg)

    def is_closed_by_server(self, timeout: float = RECV_TIMEOUT) -> bool:
        """True if the server closes the socket (close frame or EOF) within ``timeout``."""
        self.ws.settimeout(timeout)
        try:
            while True:
                data = self.ws.recv()
                if data in ("", b""):
                    return True
        except websocket.WebSocketConnectionClosedException:
            return True
        except websocket.WebSocketTimeoutException:
            return False
        except OSError:
            return True


class Recorder:
    """A NotifyClient callback that records every delivered value."""

    def __init__(self) -> None:
        self.values: queue.Queue[Any] = queue.Queue()
        self.last: Any = None

    def __call__(self, value: Any) -> None:
        self.values.put(value)

    def wait_for(self, pred: Callable[[Any], bool], timeout: float = RECV_TIMEOUT) -> Any:
        """Consume delivered values until one satisfies ``pred``; return it."""
        deadline = time.monotonic() + timeout
        seen: list[Any] = []
        while (left := deadline - time.monotonic()) > 0:
            try:
                value = self.values.get(timeout=left)
            except queue.Empty:
                break
            seen.append(value)
            self.last = value
            if pred(value):
                return value
        raise AssertionError(f"no matching value within {timeout}s; saw {seen!r}")

    def wait_value(self, expected: Any, timeout: float = RECV_TIMEOUT) -> Any:
        """Consume delivered values until one equals ``expected``."""
        return self.wait_for(lambda v: v == expected, timeout)
