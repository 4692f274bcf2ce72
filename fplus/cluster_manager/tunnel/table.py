"""Where each cluster's tunnel is: one row per cluster in the Cluster Manager's database.

A row names the live connection and the relay address of the replica holding it, or (both
NULL) that the edge is away, and since when. A replica that ends a connection clears the row
only if it still names that connection: an edge that reconnected elsewhere first keeps its
new row. Each replica marks its rows heard every few seconds (:meth:`TunnelTable.beat`), so
the rows of a replica that died read as away once :data:`STALE_AFTER` passes (and the first
request to find its relay gone marks them down at once).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..db import Database

SCHEMA = ("""
CREATE TABLE IF NOT EXISTS cm_tunnels (
    cluster     TEXT PRIMARY KEY,
    connection  TEXT,
    relay       TEXT,
    since       DOUBLE PRECISION NOT NULL,
    heard       DOUBLE PRECISION
)""",
          "CREATE INDEX IF NOT EXISTS cm_tunnels_relay ON cm_tunnels (relay)")
"""The table, for :meth:`fplus.cluster_manager.db.Database.prepare`."""
STALE_AFTER = 60.0
"""Seconds after the holding replica last marked a row heard at which it reads as away."""


@dataclass(frozen=True)
class Where:
    """A cluster's tunnel as the table says: connected (``relay`` set) or away, since when."""

    connection: str | None
    relay: str | None
    since: float
    heard: float | None = None

    @property
    def connected(self) -> bool:
        """Held by a replica that marked it heard lately."""
        return (self.connection is not None and self.heard is not None
                and time.time() - self.heard < STALE_AFTER)

    @property
    def away_since(self) -> float:
        """Since when the edge is away (a stale row: since its replica last marked it)."""
        return self.since if self.connection is None or self.heard is None else self.heard


class TunnelTable:
    """The rows of ``cm_tunnels``."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def connected(self, cluster: str, connection: str, relay: str) -> None:
        """``cluster``'s edge is connected now, to the replica at ``relay``."""
        now = time.time()
        self.db.execute(
            "INSERT INTO cm_tunnels (cluster, connection, relay, since, heard)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (cluster) DO UPDATE SET"
            " connection=excluded.connection, relay=excluded.relay, since=excluded.since,"
            " heard=excluded.heard", (cluster, connection, relay, now, now))

    def beat(self, relay: str) -> None:
        """Every tunnel the replica at ``relay`` holds is heard now (one write for all)."""
        self.db.execute("UPDATE cm_tunnels SET heard=? WHERE relay=? AND connection IS NOT NULL",
                        (time.time(), relay))

    def down(self, cluster: str, connection: str) -> None:
        """The connection ``connection`` of ``cluster`` ended (if the row still names it)."""
        self.db.execute(
            "UPDATE cm_tunnels SET connection=NULL, relay=NULL, heard=NULL, since=?"
            " WHERE cluster=? AND connection=?", (time.time(), cluster, connection))

    def find(self, cluster: str) -> Where | None:
        """The row of ``cluster``; None: its edge never connected."""
        row = self.db.fetchone(
            "SELECT connection, relay, since, heard FROM cm_tunnels WHERE cluster=?", (cluster,))
        if row is None:
            return None
        return Where(row[0], row[1], float(row[2]), None if row[3] is None else float(row[3]))

    def forget(self, cluster: str) -> None:
        """A deleted cluster's row."""
        self.db.execute("DELETE FROM cm_tunnels WHERE cluster=?", (cluster,))
