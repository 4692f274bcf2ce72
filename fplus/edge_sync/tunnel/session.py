"""The loop that keeps one tunnel open to the Cluster Manager, and each connection's watchdog.

Connect, serve the Cluster Manager's streams until the connection ends, connect again. A
failure waits :class:`~fplus.edge_sync.retry.Backoff` with full jitter (the first retry within
a second, so the tunnel is back soon after the Cluster Manager is), at least what a
``Retry-After`` of a 503 or 429 asks; a connection that lasted starts the count again. A
401 makes the next handshake fetch a new token. The edge pings over HTTP/2 once it heard
nothing for :data:`PING_INTERVAL` s, and again each :data:`PING_INTERVAL` s it stays quiet;
a connection silent for :data:`DEAD_AFTER` s is dropped. The Cluster Manager pings every
tunnel every 15 s, so a healthy tunnel carries its pings only (each ping the Cluster
Manager answers cost it about 0.4 ms of CPU: at 1,000 edges pinging every 15 s, 2.5 % of a
core).

Each stream is served in a thread of :class:`Workers` (one kept from an earlier stream when
one is free: starting a thread costs a request about 0.1 ms).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Protocol

import websocket

from fplus.config_store.client import ConfigStoreError
from fplus.tunnel.mux import Mux, Stream
from fplus.tunnel.transport import Transport

from ..retry import Backoff
from .connection import Refused, WebSocketTransport, spread

log = logging.getLogger(__name__)

BACKOFF = Backoff(initial=1.0, maximum=30.0, jitter=1.0)
"""Full jitter: after n failures in a row, a wait drawn evenly from (0, min(2^(n-1), 30)] s."""
PING_INTERVAL = 20.0
"""Seconds of silence after which the edge pings (more than the Cluster Manager's 15 s
between its own pings, so its pings keep the edge from pinging)."""
DEAD_AFTER = 45.0
LASTED = 30.0
"""A connection that stayed up this long (seconds) resets the failure count."""
RETRY_AFTER_STATUSES = (429, 503)
WORKER_IDLE = 30.0
"""Seconds a stream's thread waits for another stream before it ends."""


class Tokens(Protocol):
    """Where the Bearer token comes from: Edge Sync's :class:`ConfigStoreClient`."""

    def token(self) -> str:
        """A valid token (fetched when missing or about to expire)."""

    def invalidate_token(self) -> None:
        """Forget the cached token: the next :meth:`token` fetches a new one."""


class Workers:
    """Threads for a :class:`~fplus.tunnel.mux.Mux`'s streams (its ``spawn``): each task
    runs in a thread of its own, one that finished a task earlier and waits for another
    (:data:`WORKER_IDLE` s at most), else a new one. A task is never queued behind
    another: a watch holds its thread for as long as it lasts."""

    def __init__(self, idle: float = WORKER_IDLE, name: str = "edge-sync-tunnel") -> None:
        self.idle, self.name = idle, name
        self._lock = threading.Lock()
        self._tasks: queue.Queue[Callable[[], None]] = queue.Queue()
        self._waiting = 0
        """Threads waiting for a task and not yet promised one."""

    def spawn(self, task: Callable[[], None]) -> None:
        """Run ``task`` in a free thread, or a new one."""
        with self._lock:
            if self._waiting:
                self._waiting -= 1
                self._tasks.put(task)  # under the lock: a thread giving up sees it
                return
        threading.Thread(target=self._work, args=(task,), name=self.name,
                         daemon=True).start()

    @property
    def waiting(self) -> int:
        """Threads free for a task now."""
        return self._waiting

    def _work(self, task: Callable[[], None]) -> None:
        while True:
            try:
                task()
            except Exception:  # the Mux's own tasks catch theirs: a bug, logged
                log.exception("tunnel: a stream's task failed")
            del task  # nothing of the stream is held while waiting
            with self._lock:
                self._waiting += 1
            try:
                task = self._tasks.get(timeout=self.idle)
            except queue.Empty:
                with self._lock:
                    try:
                        task = self._tasks.get_nowait()  # promised just now
                    except queue.Empty:
                        self._waiting -= 1
                        return


class Tunnel:
    """One edge's tunnel: :meth:`run` keeps it open until its ``stop`` is set or
    :meth:`close` is called; each stream the Cluster Manager opens goes to ``forward``
    (in a thread of ``workers``)."""

    def __init__(self, url: str, tokens: Tokens, forward: Callable[[Stream], None], *,
                 backoff: Backoff = BACKOFF, ping_interval: float = PING_INTERVAL,
                 dead_after: float = DEAD_AFTER, lasted: float = LASTED,
                 connect_timeout: float = 10.0,
                 on_close: Callable[[], None] | None = None,
                 workers: Workers | None = None) -> None:
        self.url, self.tokens, self.forward = url, tokens, forward
        self.on_close = on_close
        self.workers = workers or Workers()
        self.backoff, self.ping_interval, self.dead_after = backoff, ping_interval, dead_after
        self.lasted, self.connect_timeout = lasted, connect_timeout
        self.connected = threading.Event()
        """Set while a connection is up (for status and tests)."""
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._mux: Mux | None = None

    def run(self, stop: threading.Event) -> None:
        """Keep the tunnel open until ``stop`` (or :meth:`close`); never raises for a
        connection that fails or ends."""
        failures = 0
        while not self._stopping(stop):
            started = time.monotonic()
            wait = 0.0
            try:
                self._session(stop)
                if time.monotonic() - started >= self.lasted:
                    failures = 0
            except Refused as exc:
                log.warning("tunnel: %s refused the connection (%d)%s", self.url, exc.status,
                            f"; retrying after {exc.retry_after:.0f} s"
                            if exc.retry_after is not None else "")
                if exc.status == 401:
                    self.tokens.invalidate_token()
                if exc.status in RETRY_AFTER_STATUSES and exc.retry_after is not None:
                    wait = spread(exc.retry_after)
            except (websocket.WebSocketException, OSError) as exc:
                log.warning("tunnel: cannot connect to %s: %s", self.url, _describe(exc))
            except ConfigStoreError as exc:
                log.warning("tunnel: no Config Store token to connect with: %s",
                            _describe(exc))
            failures += 1
            self._wait(stop, max(wait, self.backoff.delay(failures)))

    def close(self) -> None:
        """Stop :meth:`run` and close the connection it holds (then ``on_close``)."""
        self._stop.set()
        with self._lock:
            mux = self._mux
        if mux is not None:
            _end(mux)
        if self.on_close is not None:
            self.on_close()

    # -- one connection ------------------------------------------------------------------
    def _session(self, stop: threading.Event) -> None:
        """Connect and serve until the connection ends (raises if it cannot connect)."""
        transport = WebSocketTransport.connect(self.url, self.tokens.token(),
                                               timeout=self.connect_timeout)
        mux = edge_mux(transport, self.forward, self.workers)
        with self._lock:
            self._mux = mux
        started = time.monotonic()
        self.connected.set()
        log.info("tunnel: connected to %s", self.url)
        why: list[str] = []
        watchdog = threading.Thread(target=self._watch, args=(mux, stop, why),
                                    name="edge-sync-tunnel-watchdog", daemon=True)
        watchdog.start()
        try:
            mux.run()
        finally:
            self.connected.clear()
            _end(mux)
            with self._lock:
                self._mux = None
            watchdog.join()
            log.info("tunnel: disconnected from %s after %.0f s: %s", self.url,
                     time.monotonic() - started,
                     why[0] if why else "the Cluster Manager closed the connection")

    def _watch(self, mux: Mux, stop: threading.Event, why: list[str]) -> None:
        """Ping once nothing was heard for :attr:`ping_interval`, and every
        :attr:`ping_interval` while that lasts; end the connection when nothing was heard for
        :attr:`dead_after` or when stopping."""
        tick = min(0.25, self.ping_interval)
        next_ping = 0.0
        while not mux.closed.wait(tick):
            now = time.monotonic()
            if self._stopping(stop):
                why.append("stopping")
            elif now - mux.last_heard > self.dead_after:
                why.append(f"nothing heard for {self.dead_after:.0f} s")
            else:
                if now - mux.last_heard >= self.ping_interval and now >= next_ping:
                    mux.ping()
                    next_ping = now + self.ping_interval
                continue
            _end(mux)
            return

    def _stopping(self, stop: threading.Event) -> bool:
        return stop.is_set() or self._stop.is_set()

    def _wait(self, stop: threading.Event, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self._stopping(stop) and (left := deadline - time.monotonic()) > 0:
            stop.wait(min(left, 0.5))


def edge_mux(transport: Transport, forward: Callable[[Stream], None],
             workers: Workers) -> Mux:
    """The edge's end of one tunnel connection: each stream the Cluster Manager opens goes
    to ``forward`` in a thread of ``workers`` (and so does the Mux's writer)."""
    return Mux(transport, client=False, on_stream=forward, spawn=workers.spawn)


def _end(mux: Mux) -> None:
    """Close the connection, and its transport at once (a writer blocked on a dead peer's
    full buffer would not get to it)."""
    mux.close()
    mux.transport.close()


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
