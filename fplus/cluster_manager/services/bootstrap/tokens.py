"""One-time bootstrap tokens: issued per cluster, stored hashed, expiring, single use.

A new token for a cluster replaces the previous one (which then fails as unknown). Tokens
live in the Cluster Manager's database (:mod:`fplus.cluster_manager.db`: a private SQLite file in
the data directory, or PostgreSQL shared by every replica), so a restart does not invalidate
URLs already handed out and a URL issued by one replica is honoured by any, once: redeeming is
one conditional update, which only one caller can win. Expiry is by the database's clock. Only
SHA-256 digests are stored; the token itself is shown once.

While the database cannot be reached every operation raises
:class:`~fplus.cluster_manager.services.errors.Unavailable` (503, ``Retry-After``).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ...db import Database, DatabaseUnavailable
from ...db.sqlite import SqliteDatabase
from ..errors import Gone, Unauthorized, Unavailable

SCHEMA = ("""
CREATE TABLE IF NOT EXISTS cm_bootstrap_tokens (
    cluster TEXT PRIMARY KEY,
    digest  TEXT NOT NULL,
    expires DOUBLE PRECISION NOT NULL,
    used    INTEGER NOT NULL DEFAULT 0
)""",)
"""The table, for :meth:`fplus.cluster_manager.db.Database.prepare`."""

RETRY_AFTER = 5
T = TypeVar("T")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class BootstrapTokens:
    """Issue and redeem bootstrap tokens (thread-safe, and safe across replicas)."""

    def __init__(self, db: Database | Path, ttl: float = 3600.0) -> None:
        """Tokens in ``db`` (prepared with :data:`SCHEMA`), valid for ``ttl`` seconds; a
        path is a private SQLite file there, prepared now (``DatabaseError`` if unusable)."""
        if isinstance(db, Path):
            db = SqliteDatabase(db)
            db.prepare(SCHEMA)
        self.ttl = ttl
        self._db = db

    def _reach(self, operation: Callable[[], T]) -> T:
        try:
            return operation()
        except DatabaseUnavailable:
            raise Unavailable("the bootstrap token database cannot be reached; try again",
                              retry_after=RETRY_AFTER) from None

    def issue(self, cluster: str) -> str:
        """A new token for ``cluster``; any previous one stops working."""
        token = secrets.token_urlsafe(32)
        self._reach(lambda: self._db.execute(
            "INSERT INTO cm_bootstrap_tokens (cluster, digest, expires, used)"
            " VALUES (?, ?, {now} + ?, 0)"
            " ON CONFLICT (cluster) DO UPDATE SET digest=excluded.digest,"
            " expires=excluded.expires, used=0",
            (cluster, _digest(token), self.ttl)))
        return token

    def check(self, cluster: str, token: str | None) -> None:
        """Raise unless ``token`` is the cluster's current, unused, unexpired token."""
        if not token:
            raise Unauthorized("a bootstrap token is required: ask for a bootstrap URL "
                               "(POST /v1/cluster/<cluster>/bootstrap-url)")
        row = self._reach(lambda: self._db.fetchone(
            "SELECT digest, CASE WHEN expires <= {now} THEN 1 ELSE 0 END, used"
            " FROM cm_bootstrap_tokens WHERE cluster=?", (cluster,)))
        if row is None or not secrets.compare_digest(row[0], _digest(token)):
            raise Unauthorized("unknown or superseded bootstrap token")
        if row[2]:
            raise Gone("this bootstrap URL has been used already; ask for a new one")
        if row[1]:
            raise Gone("this bootstrap URL has expired; ask for a new one")

    def redeem(self, cluster: str, token: str | None) -> None:
        """Use up ``token`` (as :meth:`check`, then mark it used in one conditional update:
        across every replica only one caller wins)."""
        self.check(cluster, token)
        assert token is not None
        won = self._reach(lambda: self._db.execute(
            "UPDATE cm_bootstrap_tokens SET used=1"
            " WHERE cluster=? AND digest=? AND used=0 AND expires > {now}",
            (cluster, _digest(token))))
        if won != 1:
            raise Gone("this bootstrap URL has been used already; ask for a new one")

    def release(self, cluster: str, token: str | None) -> None:
        """Make a redeemed ``token`` usable again (its script could not be delivered)."""
        if token:
            self._reach(lambda: self._db.execute(
                "UPDATE cm_bootstrap_tokens SET used=0 WHERE cluster=? AND digest=?",
                (cluster, _digest(token))))

    def forget(self, cluster: str) -> None:
        """Drop the cluster's token (e.g. when the cluster is decommissioned)."""
        self._reach(lambda: self._db.execute(
            "DELETE FROM cm_bootstrap_tokens WHERE cluster=?", (cluster,)))
