"""The tunnels this replica holds, and what each is carrying (for the per-tunnel bounds)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from fplus.tunnel.mux import Headers, Mux, Stream

from .bounds import TunnelLimits, too_many


@dataclass(slots=True)
class Tunnel:
    """One edge's connection to this replica."""

    cluster: str
    mux: Mux
    limits: TunnelLimits
    connection: str = field(default_factory=lambda: uuid.uuid4().hex)
    since: float = field(default_factory=time.time)
    _open: int = 0
    _by_principal: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def admit(self, principal: str) -> Callable[[], None]:
        """Count one request of ``principal``; 429 past a bound. Returns what ends the
        count (idempotent)."""
        with self._lock:
            if self._open >= self.limits.max_streams_per_cluster:
                raise too_many("this cluster's tunnel", "tunnel-max-streams-per-cluster",
                               self.limits.max_streams_per_cluster)
            if self._by_principal.get(principal, 0) >= self.limits.max_streams_per_principal:
                raise too_many(f"{principal} on this cluster's tunnel",
                               "tunnel-max-streams-per-principal",
                               self.limits.max_streams_per_principal)
            self._open += 1
            self._by_principal[principal] = self._by_principal.get(principal, 0) + 1
        released = threading.Event()

        def release() -> None:
            with self._lock:
                if released.is_set():
                    return
                released.set()
                self._open -= 1
                self._by_principal[principal] -= 1
                if not self._by_principal[principal]:
                    del self._by_principal[principal]
        return release

    def open(self, headers: Headers, end: bool = False) -> Stream:
        """A new request to the edge (``end``: one without a body)."""
        return self.mux.open(headers, end)

    @property
    def open_requests(self) -> int:
        return self._open


class Tunnels:
    """This replica's tunnels by cluster (the newest connection of a cluster wins)."""

    def __init__(self) -> None:
        self._by_cluster: dict[str, Tunnel] = {}
        self._lock = threading.Lock()

    def attach(self, tunnel: Tunnel) -> Tunnel | None:
        """Hold ``tunnel``; the one it replaces (to be closed) if any."""
        with self._lock:
            old = self._by_cluster.get(tunnel.cluster)
            self._by_cluster[tunnel.cluster] = tunnel
            return old

    def detach(self, tunnel: Tunnel) -> bool:
        """Let ``tunnel`` go; whether it was still the cluster's."""
        with self._lock:
            if self._by_cluster.get(tunnel.cluster) is tunnel:
                del self._by_cluster[tunnel.cluster]
                return True
            return False

    def get(self, cluster: str) -> Tunnel | None:
        return self._by_cluster.get(cluster)

    def all(self) -> list[Tunnel]:
        with self._lock:
            return list(self._by_cluster.values())
