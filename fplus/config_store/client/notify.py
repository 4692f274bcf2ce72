"""A notify/v2 WebSocket client: WATCH single entries and SEARCH whole apps.

One WebSocket per :class:`NotifyClient`, served by a daemon thread that authenticates
with a Bearer token, (re)sends every live subscription under a fresh uuid after each
(re)connection, folds server updates and calls the subscribers' callbacks. A subscription
sent again offers what it last saw (``resume``: a WATCH's etag, a SEARCH's digest of its
children's etags); a Config Store that finds it still current answers ``304`` and nothing is
delivered, one that cannot tell (or any other notify/v2 server) sends the whole answer as at
first, delivered as usual.

It never gives up: a lost connection is tried again after a wait drawn with full jitter
(:mod:`.backoff`), the window doubling with each consecutive failure up to its cap; a busy
Config Store's 503 (its admission control, at the handshake or at the token's login) says
when to come back in its ``Retry-After``, which is honoured when longer.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid as uuidlib
from collections.abc import Callable
from typing import Any, cast

import websocket

from fplus.serving.notify import wire

from ._fold import MISSING, SearchDelta, SearchDeltaFold, SearchFold, SearchState, WatchFold
from ._paths import seg
from ._transport import trusted_ca_bundle
from .backoff import header_retry_after, next_wait
from .errors import ConfigStoreError
from .http import ConfigStoreClient
from .subscription import Callback, Subscription

log = logging.getLogger(__name__)


def ws_url(base_url: str) -> str:
    """``http[s]://host/prefix`` → ``ws[s]://host/prefix/notify/v2``."""
    base = base_url.rstrip("/")
    if base.startswith("https://"):
        base = "wss://" + base[len("https://") :]
    elif base.startswith("http://"):
        base = "ws://" + base[len("http://") :]
    return base + wire.PATH


class NotifyClient:
    """Shared notify/v2 connection for a :class:`ConfigStoreClient`; thread-safe.

    Subscribing starts the background thread if :meth:`start` was not called yet.
    ``reconnect_delay`` is ``(first, cap)``: the n-th failure in a row waits a time drawn
    evenly between 0 and ``first * 2^(n-1)`` seconds, at most ``cap``, or the server's
    ``Retry-After`` when longer. ``resume=False`` offers nothing when subscribing again
    (every subscription's whole answer comes again after a reconnection).
    """

    def __init__(
        self,
        client: ConfigStoreClient,
        *,
        reconnect_delay: tuple[float, float] = (5.0, 60.0),
        ping_interval: float = 30.0,
        connect_timeout: float = 10.0,
        resume: bool = True,
    ) -> None:
        self._client = client
        self._resume = resume
        self.url = ws_url(client.base_url)
        self._delay = reconnect_delay
        self._ping_interval = ping_interval
        self._connect_timeout = connect_timeout
        self._lock = threading.RLock()
        self._subs: list[Subscription] = []
        self._by_uuid: dict[str, Subscription] = {}
        self._conn: websocket.WebSocket | None = None
        self._ws: websocket.WebSocket | None = None
        self._ready = threading.Event()
        self._problem: str | None = "not connected yet"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._asked: float | None = None
        """The ``Retry-After`` of the last attempt's refusal, if the server sent one."""
        self.busy_refusals = 0
        """How often the Config Store answered busy (503) to a connection or its login."""
        self.connections = 0
        """How many sessions were authenticated (the first and every reconnection)."""
        self.resumed = 0
        """How many subscriptions sent again were answered unchanged (no whole answer)."""

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> None:
        """Start the connection thread (idempotent)."""
        with self._lock:
            if self._stop.is_set():
                raise RuntimeError("NotifyClient is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="notify-v2", daemon=True)
                self._thread.start()

    def close(self) -> None:
        """Drop every subscription, close the WebSocket and stop the thread."""
        with self._lock:
            self._stop.set()
            for sub in self._subs:
                sub.closed = True
            self._subs.clear()
            self._by_uuid.clear()
            conn, thread = self._conn, self._thread
        if conn is not None:
            _abort(conn)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)

    def __enter__(self) -> NotifyClient:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait until the WebSocket is connected and authenticated."""
        return self._ready.wait(timeout)

    @property
    def connected(self) -> bool:
        """Whether the WebSocket is currently connected and authenticated."""
        return self._ready.is_set()

    @property
    def problem(self) -> str | None:
        """Why the WebSocket is not connected and authenticated (the last failure), or None."""
        return None if self._ready.is_set() else self._problem

    # -- subscriptions --------------------------------------------------------

    def watch(self, app: str, obj: str, callback: Callback) -> Subscription:
        """Watch one entry: ``callback(value)`` on each change, ``callback(None)`` if absent."""
        return self.watch_url(f"v2/app/{seg(app)}/object/{seg(obj)}", callback)

    def watch_url(self, url: str, callback: Callback) -> Subscription:
        """Watch any service URL (relative, e.g. ``v2/app/<app>/object/<obj>``)."""
        request = {"method": "WATCH", "request": {"url": url.lstrip("/")}}
        return self._add(request, WatchFold, callback)

    def search(
        self,
        app: str,
        callback: Callable[[SearchState], None] | Callable[[SearchDelta], None],
        filter: dict[str, Any] | None = None,
        *,
        deltas: bool = False,
    ) -> Subscription:
        """Watch every entry of ``app``: ``callback({obj: value, ...})`` after each change.

        The mapping is a :class:`SearchState`; its ``etags`` give each entry's etag. It is a
        fresh copy each time, so an update costs as much as the app is large. With
        ``deltas=True`` the callback gets each update as a :class:`SearchDelta` instead (a
        full one first, and again after a reconnection unless the Config Store finds what
        it holds unchanged), to keep in a
        :class:`SearchMirror` of its own: the cost of an update is then that of the children
        it names.
        """
        request: dict[str, Any] = {"method": "SEARCH", "parent": f"v2/app/{seg(app)}/object/"}
        if filter is not None:
            request["filter"] = filter
        return self._add(request, SearchDeltaFold if deltas else SearchFold, callback)

    def _add(
        self,
        request: dict[str, Any],
        fold: Callable[[], WatchFold | SearchFold | SearchDeltaFold],
        callback: Callback,
    ) -> Subscription:
        sub = Subscription(self, request, fold, callback)
        with self._lock:
            self.start()
            self._subs.append(sub)
            if self._ws is not None:
                self._send_sub(self._ws, sub)
        return sub

    def _send_sub(self, ws: websocket.WebSocket, sub: Subscription) -> None:
        """(Re)send ``sub`` under a new uuid, offering what its fold holds (else with fresh
        fold state); caller holds the lock."""
        if sub.uuid is not None:
            self._by_uuid.pop(sub.uuid, None)
        sub.uuid = str(uuidlib.uuid4())
        token = sub.fold.resume_token() if self._resume else None
        if token is None:
            sub.fold = sub._new_fold()
        sub.live = False
        self._by_uuid[sub.uuid] = sub
        request = sub.request if token is None else {**sub.request, wire.RESUME: token}
        try:
            ws.send(wire.request(sub.uuid, request))
        except (websocket.WebSocketException, OSError) as exc:
            log.warning("notify: sending a subscription failed (%s); reconnecting", exc)
            _abort(ws)

    def _close_sub(self, sub: Subscription) -> None:
        with self._lock:
            if sub.closed:
                return
            sub.closed = True
            if sub in self._subs:
                self._subs.remove(sub)
            sent_as = sub.uuid
            if sent_as is None or self._by_uuid.pop(sent_as, None) is None or self._ws is None:
                return
            try:
                self._ws.send(wire.close(sent_as))
            except (websocket.WebSocketException, OSError) as exc:
                log.debug("notify: sending CLOSE failed: %s", exc)

    # -- connection thread ----------------------------------------------------

    def _run(self) -> None:
        quick_retry = True
        failures = 0
        while not self._stop.is_set():
            outcome = "failed"
            self._asked = None
            try:
                outcome = self._session()
            except websocket.WebSocketBadStatusException as exc:
                self._refused(exc.status_code, header_retry_after(exc.resp_headers))
            except ConfigStoreError as exc:  # the token's login failed, after its retries
                self._problem = f"no Config Store token: {_describe(exc)}"
                if exc.status == 503:
                    self._refused(503, exc.retry_after)
                elif not self._stop.is_set():
                    log.warning("notify: %s", self._problem)
            except (websocket.WebSocketException, OSError) as exc:
                self._problem = f"{self.url}: {_describe(exc)}"
                if not self._stop.is_set():
                    log.warning("notify: connection to %s lost: %s", self.url, exc)
            except Exception as exc:
                self._problem = f"{self.url}: {_describe(exc)}"
                log.exception("notify: connection to %s failed", self.url)
            finally:
                self._disconnected()
            if outcome == "authenticated":
                quick_retry, failures = True, 0
            if outcome == "unauthorized" and quick_retry:
                quick_retry = False
                continue
            failures += 1
            first, cap = self._delay
            self._stop.wait(next_wait(failures, first, cap, self._asked))

    def _refused(self, status: int, asked: float | None) -> None:
        """The Config Store refused the connection (or its login) with ``status``: a busy
        one (503) says in ``asked`` when to come back."""
        self._asked = asked
        self._problem = f"{self.url}: the Config Store answered {status}" + (
            f", come back in {asked:.0f} s" if asked is not None else "")
        if status == 503:
            self.busy_refusals += 1
            log.info("notify: %s", self._problem)  # expected in a storm: not a warning
        elif not self._stop.is_set():
            log.warning("notify: %s", self._problem)

    def _session(self) -> str:
        """Connect, authenticate, resubscribe and pump updates until the socket fails."""
        # UTF-8 is checked when a message is decoded; websocket-client's own pure-Python
        # check costs about a second per MB and makes big updates fall behind
        bundle = trusted_ca_bundle()
        ws = websocket.create_connection(self.url, timeout=self._connect_timeout,
                                         skip_utf8_validation=True,
                                         sslopt={"ca_certs": bundle} if bundle else None)
        with self._lock:
            self._conn = ws
            if self._stop.is_set():
                return "stopped"
        ws.send(wire.bearer(self._client.token()))
        reply = ws.recv()
        reply = (reply.decode() if isinstance(reply, bytes) else reply).strip()
        if reply == wire.UNKNOWN_TOKEN:
            self._problem = "the Config Store refused the token (401)"
            log.warning("notify: token refused; fetching a new one")
            self._client.invalidate_token()
            return "unauthorized"
        if reply != wire.AUTHENTICATED:
            self._problem = f"authentication answered {reply[:40]!r}"
            log.warning("notify: authentication answered %r", reply[:40])
            return "failed"
        ws.settimeout(self._ping_interval)
        with self._lock:
            if self._stop.is_set():
                return "stopped"
            self._ws = ws
            for sub in list(self._subs):
                self._send_sub(ws, sub)
            self._problem = None
            self.connections += 1
            self._ready.set()
        log.info("notify: connected to %s", self.url)
        self._problem = self._pump(ws)
        return "authenticated"

    def _pump(self, ws: websocket.WebSocket) -> str:
        """Receive frames until close; ping when idle, give up after two silent intervals.
        Returns why the connection ended."""
        silent = 0
        while not self._stop.is_set():
            try:
                opcode, data = ws.recv_data(control_frame=True)
            except websocket.WebSocketTimeoutException:
                if silent >= 1:
                    log.warning("notify: no answer to ping; reconnecting")
                    return "the Config Store did not answer a ping"
                silent += 1
                ws.ping()
                continue
            silent = 0
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                reason = wire.close_reason(data)
                log.info("notify: server closed the connection%s",
                         f" ({reason})" if reason else "")
                return "the Config Store closed the connection" + (
                    f" ({reason})" if reason else "")
            if opcode in (websocket.ABNF.OPCODE_TEXT, websocket.ABNF.OPCODE_BINARY):
                self._dispatch(data)
        return "stopped"

    def _disconnected(self) -> None:
        with self._lock:
            conn = self._conn
            self._conn = self._ws = None
            self._ready.clear()
            self._by_uuid.clear()
            for sub in self._subs:
                sub.uuid = None
                sub.live = False
        if conn is not None:
            try:
                conn.close(timeout=1.0)
            except Exception:
                log.debug("notify: closing the socket failed", exc_info=True)

    def _dispatch(self, data: bytes | str) -> None:
        """Fold one server message into its subscription and deliver the result."""
        try:
            msg = json.loads(data)
        except ValueError:
            log.warning("notify: ignoring a non-JSON message")
            return
        except RecursionError:
            log.warning("notify: ignoring a message nested too deeply to parse")
            return
        if not isinstance(msg, dict) or not isinstance(msg.get("uuid"), str):
            return
        status = msg.get("status")
        with self._lock:
            sub = self._by_uuid.get(msg["uuid"])
            if sub is None or sub.closed:
                return
            sub.status = status if isinstance(status, int) else None
            if isinstance(status, int) and status >= 400:
                del self._by_uuid[msg["uuid"]]
                if sub in self._subs:
                    self._subs.remove(sub)
                sub.ended = True
                sub.live = False
                log.warning("notify: server ended %s subscription (%d)",
                            sub.request["method"], status)
                sub._delivered.set()
                return
            sub.live = True
            response = msg.get("response")
            if isinstance(response, dict) and response.get("status") == wire.UNCHANGED:
                self.resumed += 1
        value = sub.fold.apply(msg)
        if value is not MISSING:
            sub._deliver(value)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _abort(ws: websocket.WebSocket) -> None:
    """Shut the socket at once, waking a thread blocked reading it (websocket-client's
    ``abort``, which its annotations leave untyped)."""
    cast(Callable[[], None], ws.abort)()
