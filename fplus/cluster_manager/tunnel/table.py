"""Where each cluster's tunnel is: one row per cluster in the Cluster Manager's database.

A row names the live connection and the relay address of the replica holding it, or (both
NULL) that the edge is away, and since when. A replica that ends a connection clears the row
only if it still names that connection: an edge that reconnected elsewhere first keeps its
new row. A replica that dies leaves its rows behind; the first request to find the relay
gone marks them down (:meth:`TunnelTable.down`).
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
    since       DOUBLE PRECISION NOT NULL
)""",)
"""The table, for :meth:`fplus.cluster_manager.db.Database.prepare`."""


@dataclass(frozen=True)
class Where:
    """A cluster's tunnel as the table says: connected (``relay`` set) or away, since when."""

    connection: str | None
    relay: str | None
    since: float

    @property
    def connected(self) -> bool:
        return self.connection is not None


class TunnelTable:
    """The rows of ``cm_tunnels``."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def connected(self, cluster: str, connection: str, relay: str) -> None:
        """``cluster``'s edge is connected now, to the replica at ``relay``."""
        self.db.execute(
            "INSERT INTO cm_tunnels (cluster, connection, relay, since) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (cluster) DO UPDATE SET connection=excluded.connection,"
            " relay=excluded.relay, since=excluded.since",
            (cluster, connection, relay, time.time()))

    def down(self, cluster: str, connection: str) -> None:
        """The connection ``connection`` of ``cluster`` ended (if the row still names it)."""
        self.db.execute(
            "UPDATE cm_tunnels SET connection=NULL, relay=NULL, since=?"
            " WHERE cluster=? AND connection=?", (time.time(), cluster, connection))

    def find(self, cluster: str) -> Where | None:
        """The row of ``cluster``; None: its edge never connected."""
        row = self.db.fetchone(
            "SELECT connection, relay, since FROM cm_tunnels WHERE cluster=?", (cluster,))
        return None if row is None else Where(row[0], row[1], float(row[2]))

    def forget(self, cluster: str) -> None:
        """A deleted cluster's row."""
        self.db.execute("DELETE FROM cm_tunnels WHERE cluster=?", (cluster,))
