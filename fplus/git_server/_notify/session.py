"""The subscriptions of one authenticated notify/v2 connection serving WATCH of polled state.

The protocol is ACS's (``docs/services/notify-v2.md``, served by
``lib/js-service-api/lib/notify-v2.js``), as the Config Store speaks it:
``{"uuid", "method": "WATCH", "request": {"url", "method"?: "GET" | "HEAD"}}`` opens a
subscription: its first update has status 201, later ones 200, each ``{"status", "uuid",
"response": {"status", "body"?}}``, sent only when the response changed (HEAD: no body);
``{"uuid", "method": "CLOSE"}`` ends one with ``{"status": 410, "uuid"}``. A URL not served is
``{"status": 404, "uuid"}``, a malformed request 400, a subscription past the cap 429. A
message that is not a JSON object with a ``uuid`` ends the connection (1008).

What a URL answers is the service's (:class:`.watches.WatchService`). Every response
is computed again when the service signals a change and every ``refresh`` seconds anyway
(what it does not signal still shows). The token is checked again every ``recheck``
seconds; the connection closes with 1008 once it proves nobody.

Threads: the connection's own thread refreshes the subscriptions, pings and re-checks; one
reader thread handles the client's requests (and answers its pings). Both write under one
lock, held while a subscription is computed and its update written, so its 201 always goes
before its 200s. A client that accepts nothing for ``send_timeout`` is dropped (the write
raises one of :data:`GONE`).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from wsproto.events import Event, Ping

from fplus.serving.http.websocket import GONE, MessageTooBig, WebSocket, describe
from fplus.serving.notify.bearer import CLOSE_WAIT_S
from fplus.serving.notify.protocol import (
    Request,
    RequestRefused,
    dispatch,
    over_connection_cap,
    parse_request,
)
from fplus.serving.notify.wire import NORMAL, POLICY, TOO_BIG, dumps, reply

from .watches import Watch, WatchService, WatchSettings

log = logging.getLogger(__name__)


@dataclass
class _Sub:
    watch: Watch
    head: bool
    last: str | None = None
    """The last response sent, as JSON text."""


class WatchSession:
    """One authenticated connection's subscriptions."""

    def __init__(self, ws: WebSocket, service: WatchService, settings: WatchSettings,
                 principal: Any, token: str) -> None:
        self.ws, self.service, self.settings = ws, service, settings
        self.principal, self._token = principal, token
        self.subs: dict[str, _Sub] = {}
        self._lock = threading.Lock()
        """Held for :attr:`subs` and for every write to the socket."""
        self._wake = threading.Event()
        """Set on a change and when the reader ends."""
        self._ended = False
        self._close = (NORMAL, "")

    def run(self) -> None:
        """Refresh until the client or the credentials end; then close."""
        self.ws.on_control = self._control
        unsubscribe = self.service.subscribe(self._wake.set)
        reader = threading.Thread(target=self._read, daemon=True, name="notify-reader")
        reader.start()
        try:
            self._loop()
            with self._lock:
                self.ws.close(*self._close)
        finally:
            self._ended = True
            unsubscribe()
            reader.join(CLOSE_WAIT_S)  # the client answers our close frame, or not

    def _loop(self) -> None:
        s = self.settings
        now = time.monotonic()
        next_refresh, next_check = now + s.refresh, now + s.recheck
        next_ping = now + s.ping_interval
        while True:
            wait = min(next_refresh, next_check, next_ping) - time.monotonic()
            woken = self._wake.wait(max(0.0, wait))
            self._wake.clear()
            if self._ended:
                return
            now = time.monotonic()
            if now >= next_check:
                next_check = now + s.recheck
                if not self._still_valid():
                    return
            if now >= next_ping:
                next_ping = now + s.ping_interval
                if self.ws.peer_close is None:
                    self._control(Ping())
            if woken or now >= next_refresh:
                next_refresh = now + s.refresh
                with self._lock:
                    for sub_uuid, sub in list(self.subs.items()):
                        self._update(sub_uuid, sub, 200)

    def _still_valid(self) -> bool:
        try:
            found = self.service.identify(self._token)
        except Exception as exc:  # cannot tell now: ask again at the next recheck
            log.warning("notify: cannot re-check a token: %s", describe(exc))
            return True
        if found is None:
            log.info("notify: the token of %s ended", self.principal)
            self._close = (POLICY, "notify: credentials revoked or expired")
            return False
        self.principal = found
        return True

    def _control(self, event: Event) -> None:
        with self._lock:
            self.ws.send(event)

    def _end(self, code: int, reason: str) -> None:
        self._close = (code, reason)
        self._ended = True
        self._wake.set()

    # -- the reader's thread --------------------------------------------------------

    def _read(self) -> None:
        """Handle requests until the client closes, goes away, breaks the protocol or stays
        silent for two ping intervals and more."""
        s = self.settings
        silence = 2 * s.ping_interval + s.send_timeout
        try:
            while not self._ended:
                try:
                    message = self.ws.receive(s.message_bytes)
                except TimeoutError:
                    if time.monotonic() - self.ws.last_heard > silence:
                        log.debug("notify: client silent for %.0f s", silence)
                        break
                    continue
                if message is None:
                    break
                error = self._request(message)
                if error:
                    self._end(POLICY, error)
        except MessageTooBig as exc:
            self._end(TOO_BIG, f"notify: message over {exc.limit} bytes")
        except GONE as exc:
            log.debug("notify client went away: %s", describe(exc))
        finally:
            self._ended = True
            self._wake.set()

    def _request(self, message: str | bytes) -> str | None:
        """Handle one request; the reason to end the connection if it cannot be answered."""
        try:
            sub_uuid, req = parse_request(message)
        except RequestRefused as exc:
            return str(exc)
        with self._lock:
            dispatch(sub_uuid, req, self.subs, self.ws.send_text, self._open)
        return None

    # -- either thread, holding the lock --------------------------------------------

    def _open(self, sub_uuid: str, req: Request) -> None:
        """Every request but CLOSE (:func:`fplus.serving.notify.protocol.dispatch`)."""
        method = req.get("method")
        if method == "WATCH":
            self._watch(sub_uuid, req.get("request"))
        elif method == "SEARCH" and str(req.get("parent", "")).endswith("/"):
            self._reply(sub_uuid, 404)  # nothing here is searched (as ACS)
        else:
            self._reply(sub_uuid, 400)

    def _watch(self, sub_uuid: str, request: Any) -> None:
        if not isinstance(request, dict) or not isinstance(request.get("url"), str):
            self._reply(sub_uuid, 400)
            return
        verb = str(request.get("method", "GET")).upper()
        if verb not in ("GET", "HEAD"):
            self._reply(sub_uuid, 400)
            return
        full = over_connection_cap(sub_uuid, self.subs, self.settings.max_subscriptions)
        if full:
            self._reply(sub_uuid, 429, full)
            return
        watch = self.service.resolve(request["url"].split("?", 1)[0])
        if watch is None:
            self._reply(sub_uuid, 404)
            return
        self.subs[sub_uuid] = sub = _Sub(watch, verb == "HEAD")
        self._update(sub_uuid, sub, 201)

    def _update(self, sub_uuid: str, sub: _Sub, status: int) -> None:
        """Send ``sub``'s response if it is new (always with 201)."""
        try:
            response = sub.watch(self.principal)
        except Exception:
            if sub.last != dumps({"status": 500}):
                log.exception("notify: a watch failed")
            response = {"status": 500}
        if sub.head:
            response = {k: v for k, v in response.items() if k != "body"}
        text = dumps(response)
        if status == 200 and text == sub.last:
            return
        sub.last = text
        self.ws.send_text(dumps({"status": status, "uuid": sub_uuid, "response": response}))

    def _reply(self, sub_uuid: str, status: int, error: str = "") -> None:
        self.ws.send_text(reply(sub_uuid, status, error))
