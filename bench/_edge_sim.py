"""One process of simulated Edge Sync agents; ``bench/fleet.py`` starts several (``python -m
bench._edge_sim``) and this module is never imported by it.

A process's edges run on gevent (``monkey.patch_all`` first), so the real Edge Sync client
code runs unchanged and cheaply: each edge's ``NotifyClient`` thread is a greenlet holding
its notify/v2 WebSocket with ``DeploymentSync``'s three subscriptions, and its heartbeat is a
``StatusReporter`` flush through its own ``ConfigStoreClient`` (its own Bearer token). A
failed write is retried after the reporter's back-off, as Edge Sync's writer does.

After each write the edge drops its keep-alive socket: a real edge's is closed by the
Config Store's 15 s idle timeout (``FPLUS_HTTP_IDLE_TIMEOUT``) before its next heartbeat
anyway, so each heartbeat opens a connection either way; dropping it at once keeps the
sockets held to the WebSockets (one file descriptor per edge on each side).

Every client socket is bound to this process's own loopback source address (127.0.0.k,
with ``IP_BIND_ADDRESS_NO_PORT``): each source address has its own ephemeral port range per
server address and port, so no ``(source, replica)`` pair comes near the ~28,000 ports of
``ip_local_port_range``.

Protocol on stdin/stdout, one JSON object a line: the spec in; ``{"ready": …}`` out once
every edge is logged in and subscribed; ``{"t0", "end", "restart_at"}`` in (monotonic
seconds, one clock for every process); the result out.
"""

from gevent import monkey

monkey.patch_all()

# ruff: noqa: E402  (gevent patches the standard library before anything imports it)
import gc
import heapq
import json
import logging
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gevent
from gevent.pool import Pool

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._fleet_setup import fake_hosts
from fplus.config_store.client import ConfigStoreClient, ConnectionFailed, NotifyClient
from fplus.config_store.client.errors import ServerError
from fplus.config_store.client.subscription import Subscription
from fplus.edge_sync import __version__
from fplus.edge_sync.agent import RECONNECT_DELAY
from fplus.edge_sync.deployments import ClusterInfo, DeploymentSync
from fplus.edge_sync.status import StatusReporter, utc_now
from harness.certs import certificate

IP_BIND_ADDRESS_NO_PORT = 24  # linux/in.h: the port is chosen at connect(), per destination


def bind_source(address: str) -> None:
    """Make every IPv4 loopback client socket of this process connect from ``address``."""
    base = socket.socket

    class Bound(base):  # type: ignore[valid-type,misc]
        def connect(self, addr: Any) -> None:
            if self.family == socket.AF_INET and str(addr[0]).startswith("127."):
                self.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
                self.bind((address, 0))
            super().connect(addr)

    socket.socket = Bound  # type: ignore[misc]


class EdgeNotify(NotifyClient):
    """Edge Sync's notify client, keeping the handles of its subscriptions to count them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.subs: list[Subscription] = []

    def search(self, *args: Any, **kwargs: Any) -> Subscription:
        sub = super().search(*args, **kwargs)
        self.subs.append(sub)
        return sub

    def live(self) -> bool:
        """Connected, and every subscription answered since (re)connecting."""
        return self.connected and all(sub.live for sub in self.subs)


@dataclass
class SimEdge:
    cluster: str
    replica: int
    client: ConfigStoreClient
    reporter: StatusReporter
    notify: EdgeNotify | None = None
    sync: DeploymentSync | None = None
    reports: int = 0
    lost_at: float | None = None
    """When its WebSocket was first seen down after the restart began."""
    back_at: float | None = None
    """When it was first seen connected and subscribed again after that."""
    failed_at: float | None = None
    """When a write of its first failed after the restart began."""
    rewritten_at: float | None = None
    """When a write of its next succeeded."""


@dataclass
class Load:
    """What this process measured."""

    write_ms: list[float] = field(default_factory=list)
    first_ms: list[float] = field(default_factory=list)
    write_at: list[float] = field(default_factory=list)
    """When each of ``write_ms`` started (monotonic s, the clock every process shares)."""
    first_at: list[float] = field(default_factory=list)
    """When each of ``first_ms`` started."""
    lag_ms: list[float] = field(default_factory=list)
    due_ms: list[float] = field(default_factory=list)
    errors: int = 0
    missed: int = 0
    retries: int = 0
    connected_min: list[int] = field(default_factory=list)
    """Per replica, the fewest edges connected at once before the restart."""
    connected_before: int = 0
    """The fewest connected at once before the restart, all replicas."""
    connected_end: int = 0
    all_connected: bool = True
    """Every sample before the restart saw every edge connected."""
    samples: int = 0


def log_in(edges: list[SimEdge], concurrency: int, timeout: float) -> int:
    """One token per edge (``POST /token`` with its password), ``concurrency`` at a time,
    replica after replica: a token is a database write, and writes from several replicas
    wait for each other's lock (one replica's logins can be starved past the client's
    timeout). A login with no answer in time, or refused as busy (503: the Config Store's
    admission control, after the client's own retries), is tried again until ``timeout``
    seconds have passed, after the ``Retry-After`` asked. Returns how many were tried
    again."""
    again, deadline = 0, time.monotonic() + timeout

    def one(edge: SimEdge) -> None:
        nonlocal again
        while True:
            try:
                edge.client.token()
                edge.client.close()  # its keep-alive socket would hold a descriptor
                return
            except (ConnectionFailed, ServerError) as exc:
                busy = isinstance(exc, ServerError)
                if time.monotonic() > deadline or (busy and exc.status != 503):
                    raise
                again += 1
                if busy:
                    gevent.sleep(exc.retry_after or 1.0)

    Pool(concurrency).map(one, sorted(edges, key=lambda e: e.replica))
    return again


def connect(edges: list[SimEdge], wave: int, timeout: float) -> None:
    """Open each edge's WebSocket with Edge Sync's subscriptions, ``wave`` at a time."""
    for first in range(0, len(edges), wave):
        batch = edges[first:first + wave]
        for i, edge in enumerate(batch, first):
            edge.notify = EdgeNotify(edge.client, reconnect_delay=RECONNECT_DELAY)
            edge.sync = DeploymentSync(edge.notify, None,  # type: ignore[arg-type]  # not run
                                       edge.cluster, ClusterInfo(f"edge-{i}"), lambda _: None)
            edge.sync.subscribe()
        deadline = time.monotonic() + timeout
        for edge in batch:
            assert edge.sync is not None and edge.notify is not None
            if not edge.sync.wait_initial(max(0.0, deadline - time.monotonic())) \
                    or edge.sync.snapshot() is None:
                raise SystemExit(f"edge {edge.cluster} not subscribed after {timeout:.0f} s: "
                                 f"{edge.notify.problem}")


class Runner:
    """The heartbeats of this process's edges, each on its own phase."""

    def __init__(self, edges: list[SimEdge], phases: list[float], spec: dict[str, Any],
                 clock: dict[str, float]) -> None:
        self.edges, self.phases, self.load = edges, phases, Load()
        self.interval: float = spec["interval"]
        self.replicas: int = spec["replicas"]
        self.watched: int | None = spec.get("restart_replica")
        self.sample_every: float = spec["sample_every"]
        self.t0, self.end = clock["t0"], clock["end"]
        self.restart_at: float | None = clock.get("restart_at")
        self.pool = Pool(spec["concurrency"])
        self.cert = certificate(0)

    def run(self) -> Load:
        watchers = [gevent.spawn(self._census)]
        if self.restart_at is not None and self.watched is not None:
            watchers.append(gevent.spawn(self._watch_restart))
        self._schedule()
        self.pool.join()
        gevent.killall(watchers)
        self.load.connected_end = sum(self._counts())
        return self.load

    def _schedule(self) -> None:
        queue = [(self.t0 + phase, i) for i, phase in enumerate(self.phases)]
        heapq.heapify(queue)
        while queue:
            due, i = heapq.heappop(queue)
            if due >= self.end:
                break
            if time.monotonic() >= self.end:  # over, however far behind it fell
                self.load.missed += sum(-int(-(self.end - d) // self.interval)
                                        for d, _ in [(due, i), *queue] if d < self.end)
                break
            delay = due - time.monotonic()
            if delay > 0:
                gevent.sleep(delay)
            self.pool.spawn(self._write, i, due, False)
            heapq.heappush(queue, (due + self.interval, i))

    def _write(self, i: int, due: float, retry: bool) -> None:
        edge, load = self.edges[i], self.load
        first = edge.reports == 0
        if not retry:
            load.lag_ms.append(round(max(0.0, time.monotonic() - due) * 1000, 2))
            if first:
                edge.reporter.update(hosts=fake_hosts(i), kubeseal_cert=self.cert)
            edge.reporter.update(lastSeen=utc_now(), version=__version__)
        started = time.monotonic()
        result = edge.reporter.flush()
        edge.client.close()  # see the module's docstring
        now = time.monotonic()
        if result.ok and not result.sent:  # a retry with nothing left: a heartbeat wrote it
            return
        if not retry:
            load.due_ms.append(round((now - due) * 1000, 2))
        if result.ok:
            edge.reports += 1
            (load.first_ms if first else load.write_ms).append(round(result.seconds * 1000, 2))
            (load.first_at if first else load.write_at).append(round(started, 3))
            if edge.failed_at is not None and edge.rewritten_at is None:
                edge.rewritten_at = now
            return
        load.errors += 1
        if self.restart_at is not None and started >= self.restart_at and edge.failed_at is None:
            edge.failed_at = now
        wait = edge.reporter.retry_in()
        if now + wait < self.end:
            load.retries += 1
            gevent.spawn_later(wait, lambda: self.pool.spawn(self._write, i, now + wait, True))

    def _counts(self) -> list[int]:
        counts = [0] * self.replicas
        for edge in self.edges:
            if edge.notify is not None and edge.notify.connected:
                counts[edge.replica] += 1
        return counts

    def _census(self) -> None:
        load = self.load
        load.connected_min = self._counts()
        load.connected_before = sum(load.connected_min)
        load.all_connected = load.connected_before == len(self.edges)
        while True:
            gevent.sleep(self.sample_every)
            counts = self._counts()
            load.samples += 1
            if self.restart_at is None or time.monotonic() < self.restart_at:
                load.connected_min = [min(a, b) for a, b in
                                      zip(load.connected_min, counts, strict=True)]
                load.connected_before = min(load.connected_before, sum(counts))
                load.all_connected &= sum(counts) == len(self.edges)

    def _watch_restart(self) -> None:
        assert self.restart_at is not None
        gevent.sleep(max(0.0, self.restart_at - time.monotonic()))
        watched = [e for e in self.edges if e.replica == self.watched and e.notify is not None]
        while True:
            now = time.monotonic()
            for edge in watched:
                assert edge.notify is not None
                if edge.lost_at is None:
                    if not edge.notify.connected:
                        edge.lost_at = now
                elif edge.back_at is None and edge.notify.live():
                    edge.back_at = now
            gevent.sleep(0.25)


def main() -> None:
    spec = json.loads(sys.stdin.readline())
    logging.basicConfig(level=logging.ERROR)  # thousands of edges retrying: counted instead
    bind_source(spec["source"])
    urls: list[str] = spec["urls"]
    edges = [SimEdge(c, r, client := ConfigStoreClient(urls[r], name, pw, retries=0),
                     StatusReporter(client, c))
             for c, name, pw, r in spec["edges"]]
    started = time.monotonic()
    logins_again = log_in(edges, spec["login_concurrency"], 4 * spec["timeout"])
    login_s = time.monotonic() - started
    if spec["connect"]:
        connect(edges, spec["wave"], spec["timeout"])
    # Thousands of edges in one process make a heap no real edge has (each runs alone): its
    # automatic full collections stopped every edge of the process for up to 0.8 s, counted
    # in the write times. Frozen once set up, the collections walk only what the load makes.
    gc.collect()
    gc.freeze()
    print(json.dumps({"ready": {"login_s": round(login_s, 1), "logins_again": logins_again,
                                "cpu_s": time.process_time(),
                                "connect_s": round(time.monotonic() - started - login_s, 1)}}),
          flush=True)
    clock = json.loads(sys.stdin.readline())
    load = Runner(edges, spec["phases"], spec, clock).run()
    watched = [e for e in edges if e.replica == spec.get("restart_replica")]
    print(json.dumps({**load.__dict__,
                      "reports_min": min((e.reports for e in edges), default=0),
                      "resumed": sum(e.notify.resumed for e in edges if e.notify is not None),
                      "back": [(e.lost_at, e.back_at, e.failed_at, e.rewritten_at)
                               for e in watched]}), flush=True)
    for edge in edges:
        if edge.sync is not None:
            edge.sync.close()
        if edge.notify is not None:
            edge.notify.close()


if __name__ == "__main__":
    main()
