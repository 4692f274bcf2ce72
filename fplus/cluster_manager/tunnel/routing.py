"""The tunnels as the routes use them: an edge's connection served, a request sent to the
cluster's edge wherever its tunnel is, and each cluster's tunnel state."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from fplus.tunnel.mux import Headers, Mux, Stream, StreamClosed
from fplus.tunnel.transport import Transport

from .bounds import Refused, TunnelLimits
from .registry import Tunnel, Tunnels
from .relay import RelayClients, RelayServer, relay_key
from .table import TunnelTable, Where

log = logging.getLogger(__name__)
PING_EVERY = 15.0
"""Seconds between this side's pings on each tunnel."""
SILENT_FOR = 45.0
"""Seconds without a byte from an edge after which its tunnel is dropped."""


def iso(when: float) -> str:
    """A Unix time as RFC 3339 (UTC, seconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


class NoTunnel(Refused):
    """503: the cluster's edge is not connected (``since``: away since when; None: never)."""

    def __init__(self, cluster: str, since: float | None) -> None:
        away = (f"its edge has been away since {iso(since)}" if since is not None
                else "its edge has never connected")
        super().__init__(503, f"cluster {cluster} has no tunnel: {away}", retry_after=5)
        self.since = since


@dataclass(frozen=True)
class Sent:
    """A request on its way to the edge: its stream, and what ends its count."""

    stream: Stream
    release: Callable[[], None]
    lost: Callable[[], None] = lambda: None
    """Called when the connection carrying the stream closed before its answer: a relay's
    replica that cannot be reached again is marked away in the table."""

    def close(self) -> None:
        """Done with it: reset the stream unless it ended, and end its count."""
        self.stream.reset()
        self.release()


class TunnelService:
    """This replica's part in the tunnels of the fleet."""

    def __init__(self, table: TunnelTable, limits: TunnelLimits, password: str,
                 relay_bind: tuple[str, int] = ("127.0.0.1", 0),
                 relay_advertise: str | None = None) -> None:
        self.table, self.limits = table, limits
        self.tunnels = Tunnels()
        key = relay_key(password)
        self.relays = RelayClients(key)
        self.relay_server = RelayServer(self.tunnels, key, relay_bind,
                                        lambda: self.limits.idle_timeout)
        host, port = self.relay_server.address
        self.relay_address = relay_advertise or f"{host}:{port}"
        self._started = False

    def start(self) -> None:
        """Take relayed requests and keep the tunnels alive (in the serving process)."""
        if not self._started:
            self._started = True
            threading.Thread(target=self.relay_server.serve_forever, daemon=True).start()
            threading.Thread(target=self._keepalive, daemon=True).start()

    # -- the edge's side ---------------------------------------------------------------------
    def serve_edge(self, cluster: str, transport: Transport) -> None:
        """Carry requests to ``cluster``'s edge over ``transport`` until it closes."""
        tunnel = Tunnel(cluster, Mux(transport, client=True), self.limits)
        replaced = self.tunnels.attach(tunnel)
        if replaced is not None:
            replaced.mux.close()
        self.table.connected(cluster, tunnel.connection, self.relay_address)
        log.info("cluster %s: tunnel up", cluster)
        try:
            tunnel.mux.run()
        finally:
            self.tunnels.detach(tunnel)
            self.table.down(cluster, tunnel.connection)
            log.info("cluster %s: tunnel down", cluster)

    def _keepalive(self) -> None:
        while True:
            time.sleep(PING_EVERY)
            try:
                self.table.beat(self.relay_address)
            except Exception:  # the database is away: the rows go stale, the tunnels stay
                log.warning("tunnels: could not mark this replica's tunnels heard",
                            exc_info=True)
            for tunnel in self.tunnels.all():
                if time.monotonic() - tunnel.mux.last_heard > SILENT_FOR:
                    log.warning("cluster %s: tunnel silent for %.0f s; dropped",
                                tunnel.cluster, SILENT_FOR)
                    tunnel.mux.close()
                else:
                    tunnel.mux.ping()

    # -- the requests' side ------------------------------------------------------------------
    def request(self, cluster: str, headers: Headers, principal: str,
                end: bool = False) -> Sent:
        """A request to ``cluster``'s edge, here or through the replica holding its tunnel
        (``end``: it has no body); :class:`NoTunnel` or another :class:`Refused` if it
        cannot be sent."""
        local = self._fresh(cluster)
        if local is not None:
            release = local.admit(principal)
            try:
                return Sent(self._open(local, headers, end), release)
            except BaseException:
                release()
                raise
        where = self.table.find(cluster)
        return Sent(self._remote(cluster, headers, where, end), lambda: None,
                    lambda: self._probe(cluster, where))

    def _fresh(self, cluster: str) -> Tunnel | None:
        """The cluster's tunnel here, if it is open and was heard within two pings (one that
        went quiet may be half-open while its edge has connected to another replica)."""
        local = self.tunnels.get(cluster)
        if local is None or local.mux.closed.is_set():
            return None
        if time.monotonic() - local.mux.last_heard > 2 * PING_EVERY:
            return None
        return local

    def _probe(self, cluster: str, where: Where | None) -> None:
        """The relay to ``cluster``'s tunnel closed mid-request: if its replica cannot be
        reached again, its row is marked away (a replica that died cannot clear its rows)."""
        if where is None or where.relay is None:
            return
        try:
            self.relays.reach(where.relay)
        except OSError:
            self.table.down(cluster, str(where.connection))

    def _remote(self, cluster: str, headers: Headers, where: Where | None,
                end: bool) -> Stream:
        if where is None or not where.connected or where.relay is None:
            raise NoTunnel(cluster, where.away_since if where is not None else None)
        if where.relay == self.relay_address:  # ours, and gone: we would hold it
            self.table.down(cluster, str(where.connection))
            raise NoTunnel(cluster, time.time())
        relay = where.relay
        try:
            return self.relays.open(relay, cluster, headers, end)
        except (OSError, StreamClosed):
            log.warning("cluster %s: the replica at %s holding its tunnel cannot be reached",
                        cluster, relay)
            self.table.down(cluster, str(where.connection))
            raise NoTunnel(cluster, time.time()) from None

    @staticmethod
    def _open(tunnel: Tunnel, headers: Headers, end: bool) -> Stream:
        try:
            return tunnel.open(headers, end)
        except StreamClosed:
            raise NoTunnel(tunnel.cluster, time.time()) from None

    def state(self, cluster: str) -> dict[str, object]:
        """``{state: connected|down, since}`` of ``cluster``'s tunnel (since None: its edge
        never connected)."""
        local = self._fresh(cluster)
        if local is not None:
            return {"state": "connected", "since": iso(local.since)}
        where: Where | None = self.table.find(cluster)
        if where is None:
            return {"state": "down", "since": None}
        if where.connected:
            return {"state": "connected", "since": iso(where.since)}
        return {"state": "down", "since": iso(where.away_since)}

    def forget(self, cluster: str) -> None:
        """A deleted cluster: its row goes, its tunnel (if here) is closed."""
        local = self.tunnels.get(cluster)
        if local is not None:
            local.mux.close()
        self.table.forget(cluster)
