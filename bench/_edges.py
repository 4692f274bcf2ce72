"""Edges that stay connected, as Edge Sync does: one notify/v2 WebSocket per edge.

Each simulated edge holds Edge Sync's own subscriptions on its WebSocket (the three SEARCHes
of ``fplus.edge_sync.deployments.DeploymentSync.subscribe``: its Edge deployments, the Helm chart
and K8s resource templates) for as long as the fleet runs; only the reconciling worker,
which would apply to Kubernetes, is not run. HTTP keep-alive connections close after 15 s
idle (``FPLUS_HTTP_IDLE_TIMEOUT``), longer than a heartbeat's interval, so the WebSocket is
what keeps an edge connected.

What is connected is counted from both sides: the client's authenticated WebSockets, and
the established TCP sockets each Config Store holds on its port (``/proc/net/tcp``).
"""

from __future__ import annotations

import os
import resource
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fplus.config_store.client import ConfigStoreClient, NotifyClient
from fplus.edge_sync.agent import RECONNECT_DELAY
from fplus.edge_sync.deployments import ClusterInfo, DeploymentSync

THREAD_STACK = 512 * 1024
"""Stack size of each WebSocket's thread (10,000 threads at the default 8 MiB would reserve
80 GB of address space)."""
_ESTABLISHED = "01"


@dataclass
class ConnectedEdge:
    """One edge's notify/v2 connection and Edge Sync's subscriptions on it."""

    cluster: str
    replica: int
    notify: NotifyClient
    sync: DeploymentSync

    def subscribed(self) -> bool:
        """All three subscriptions answered with entries (not a refusal)."""
        return self.sync.snapshot() is not None


@dataclass
class Fleet:
    """Every edge's connection; :meth:`open` connects them, :meth:`close` ends them."""

    edges: list[ConnectedEdge] = field(default_factory=list)

    def open(self, clusters: list[str], clients: list[ConfigStoreClient], replicas: list[int],
             wave: int = 500, timeout: float = 120.0) -> float:
        """Connect edge ``i`` through ``clients[i]`` (to replica ``replicas[i]``), ``wave``
        at a time (each wave subscribed before the next starts); seconds it took."""
        previous = threading.stack_size(THREAD_STACK)
        start = time.monotonic()
        try:
            for first in range(0, len(clusters), wave):
                batch = []
                for i in range(first, min(first + wave, len(clusters))):
                    notify = NotifyClient(clients[i], reconnect_delay=RECONNECT_DELAY)
                    sync = DeploymentSync(notify, None,  # type: ignore[arg-type]  # never run
                                          clusters[i], ClusterInfo(f"edge-{i}"), lambda _: None)
                    sync.subscribe()
                    batch.append(ConnectedEdge(clusters[i], replicas[i], notify, sync))
                self.edges += batch
                deadline = time.monotonic() + timeout
                for edge in batch:
                    if not edge.sync.wait_initial(max(0.0, deadline - time.monotonic())) \
                            or not edge.subscribed():
                        raise RuntimeError(f"edge {edge.cluster} not subscribed after "
                                           f"{timeout:.0f} s: {edge.notify.problem}")
        finally:
            threading.stack_size(previous)
        return time.monotonic() - start

    def connected(self, replicas: int) -> list[int]:
        """Authenticated WebSockets per replica, now."""
        counts = [0] * replicas
        for edge in self.edges:
            if edge.notify.connected:
                counts[edge.replica] += 1
        return counts

    def close(self) -> None:
        for edge in self.edges:
            edge.sync.close()
            edge.notify.close()
        self.edges.clear()


def established(port: int) -> int:
    """Established TCP connections whose local end is 127.0.0.1:``port`` (a server's)."""
    local = f"0100007F:{port:04X}"
    count = 0
    with open("/proc/net/tcp") as table:
        next(table)
        for line in table:
            cols = line.split(None, 4)
            if cols[1] == local and cols[3] == _ESTABLISHED:
                count += 1
    return count


def open_fds(pgid: int) -> int:
    """File descriptors open in the processes of a process group."""
    total = 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if int((proc / "stat").read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                total += len(os.listdir(proc / "fd"))
        except (OSError, IndexError, ValueError):
            continue
    return total


@dataclass
class Census:
    """What :func:`census` saw over its samples, per replica."""

    connected_min: list[int]
    """The fewest edges connected at once."""
    sockets_max: list[int]
    """The most established sockets the replica held."""
    fds_max: list[int]
    """The most file descriptors open in the replica's processes."""
    samples: int = 0
    all_connected: bool = True
    """Every sample saw every edge connected."""

    def report(self, connect_s: float | None) -> dict[str, Any]:
        """The JSON fields of the fleet benchmark."""
        return {
            "connected_edges": sum(self.connected_min),
            "connected_edges_per_replica": self.connected_min,
            "all_connected_throughout": self.all_connected,
            "connection_samples": self.samples,
            "server_sockets_per_replica": self.sockets_max,
            "server_fds_per_replica": self.fds_max,
            "connect_s": round(connect_s, 1) if connect_s is not None else None,
        }


def census(fleet: Fleet, servers: list[tuple[int, int]], stop: threading.Event,
           every: float) -> Census:
    """Sample ``fleet`` and the servers (``(port, process group)`` per replica) every
    ``every`` seconds until ``stop``, and once more then."""
    seen = Census([len(fleet.edges)] * len(servers), [0] * len(servers), [0] * len(servers))
    while True:
        last = stop.wait(every)
        connected = fleet.connected(len(servers))
        for r, (port, pgid) in enumerate(servers):
            seen.connected_min[r] = min(seen.connected_min[r], connected[r])
            seen.sockets_max[r] = max(seen.sockets_max[r], established(port))
            seen.fds_max[r] = max(seen.fds_max[r], open_fds(pgid))
        seen.samples += 1
        seen.all_connected &= sum(connected) == len(fleet.edges)
        if last:
            return seen


def enough_fds(needed: int) -> None:
    """Raise this process's open-file limit (inherited by the servers) to ``needed``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise SystemExit(f"{needed} file descriptors needed, the limit is {hard} (ulimit -n):"
                         " use fewer edges or more replicas")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
