"""A lease in a row of the Cluster Manager's database (``cm_leader_lease``).

Taken and renewed by single conditional statements (compare-and-swap on the holder and the
expiry), with times from the database's clock, so replicas never compare their own clocks.
Works on SQLite (replicas on one machine) and PostgreSQL.
"""

from __future__ import annotations

from ..db import Database

SCHEMA = ("""
CREATE TABLE IF NOT EXISTS cm_leader_lease (
    name        TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    acquired    DOUBLE PRECISION NOT NULL,
    renewed     DOUBLE PRECISION NOT NULL,
    expires     DOUBLE PRECISION NOT NULL,
    transitions INTEGER NOT NULL DEFAULT 0
)""",)
"""The table, for :meth:`fplus.cluster_manager.db.Database.prepare`."""

_TAKE_NEW = ("INSERT INTO cm_leader_lease (name, holder, acquired, renewed, expires, transitions)"
             " VALUES (?, ?, {now}, {now}, {now} + ?, 0) ON CONFLICT (name) DO NOTHING")
# every SET expression sees the row as it was: a holder renews, anyone takes an expired lease
_TAKE_OR_RENEW = ("UPDATE cm_leader_lease SET"
                  " transitions = transitions + CASE WHEN holder = ? THEN 0 ELSE 1 END,"
                  " acquired = CASE WHEN holder = ? THEN acquired ELSE {now} END,"
                  " holder = ?, renewed = {now}, expires = {now} + ?"
                  " WHERE name = ? AND (holder = ? OR expires <= {now})")
_HOLDER = "SELECT holder FROM cm_leader_lease WHERE name = ? AND expires > {now}"
_RELEASE = ("UPDATE cm_leader_lease SET holder = '', expires = {now}"
            " WHERE name = ? AND holder = ?")


class DatabaseLease:
    """The lease ``name`` in ``db`` (prepared with :data:`SCHEMA`)."""

    def __init__(self, db: Database, name: str = "cluster-manager",
                 duration: float = 10.0) -> None:
        self.db = db
        self.name = name
        self.duration = duration

    def acquire(self, identity: str) -> str | None:
        """See :meth:`fplus.cluster_manager.leader.lease.Lease.acquire`."""
        if self.db.execute(_TAKE_OR_RENEW, (identity, identity, identity, self.duration,
                                            self.name, identity)) == 1:
            return identity  # renewed (a leader's every call), or taken over
        if self.db.execute(_TAKE_NEW, (self.name, identity, self.duration)) == 1:
            return identity  # the first holder ever
        return self.holder()

    def holder(self) -> str | None:
        """Who holds the lease now (None: nobody, or it expired)."""
        row = self.db.fetchone(_HOLDER, (self.name,))
        return (row[0] or None) if row else None

    def release(self, identity: str) -> None:
        """See :meth:`fplus.cluster_manager.leader.lease.Lease.release`."""
        self.db.execute(_RELEASE, (self.name, identity))

    def transitions(self) -> int:
        """How many times the lease changed hands."""
        row = self.db.fetchone("SELECT transitions FROM cm_leader_lease WHERE name = ?",
                               (self.name,))
        return int(row[0]) if row else 0
