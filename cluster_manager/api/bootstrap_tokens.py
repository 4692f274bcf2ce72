"""One-time bootstrap tokens: issued per cluster, stored hashed, expiring, single use.

A new token for a cluster replaces the previous one (which then fails as unknown). Tokens
live in a small SQLite file in the data directory, so a restart does not invalidate URLs
already handed out. Only SHA-256 digests are stored; the token itself is shown once.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import threading
import time
from pathlib import Path

from .errors import Gone, Unauthorized

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bootstrap_tokens (
    cluster TEXT PRIMARY KEY,
    digest  TEXT NOT NULL,
    expires REAL NOT NULL,
    used    INTEGER NOT NULL DEFAULT 0
)"""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class BootstrapTokens:
    """Issue and redeem bootstrap tokens (thread-safe)."""

    def __init__(self, path: Path, ttl: float = 3600.0) -> None:
        self.ttl = ttl
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # a lost token on power loss is harmless
        self._db.execute(_SCHEMA)

    def issue(self, cluster: str) -> str:
        """A new token for ``cluster``; any previous one stops working."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._db.execute(
                "INSERT INTO bootstrap_tokens (cluster, digest, expires, used) VALUES (?,?,?,0)"
                " ON CONFLICT (cluster) DO UPDATE SET digest=excluded.digest,"
                " expires=excluded.expires, used=0",
                (cluster, _digest(token), time.time() + self.ttl))
        return token

    def check(self, cluster: str, token: str | None) -> None:
        """Raise unless ``token`` is the cluster's current, unused, unexpired token."""
        if not token:
            raise Unauthorized("a bootstrap token is required: ask for a bootstrap URL "
                               "(POST /v1/cluster/<cluster>/bootstrap-url)")
        with self._lock:
            row = self._db.execute(
                "SELECT digest, expires, used FROM bootstrap_tokens WHERE cluster=?",
                (cluster,)).fetchone()
        if row is None or not secrets.compare_digest(row[0], _digest(token)):
            raise Unauthorized("unknown or superseded bootstrap token")
        if row[2]:
            raise Gone("this bootstrap URL has been used already; ask for a new one")
        if row[1] <= time.time():
            raise Gone("this bootstrap URL has expired; ask for a new one")

    def redeem(self, cluster: str, token: str | None) -> None:
        """Use up ``token`` (as :meth:`check`, then mark it used; only one caller wins)."""
        self.check(cluster, token)
        assert token is not None
        with self._lock:
            won = self._db.execute(
                "UPDATE bootstrap_tokens SET used=1"
                " WHERE cluster=? AND digest=? AND used=0 AND expires>?",
                (cluster, _digest(token), time.time())).rowcount
        if won != 1:
            raise Gone("this bootstrap URL has been used already; ask for a new one")

    def release(self, cluster: str, token: str | None) -> None:
        """Make a redeemed ``token`` usable again (its script could not be delivered)."""
        if token:
            with self._lock:
                self._db.execute("UPDATE bootstrap_tokens SET used=0 WHERE cluster=? AND digest=?",
                                 (cluster, _digest(token)))

    def forget(self, cluster: str) -> None:
        """Drop the cluster's token (e.g. when the cluster is decommissioned)."""
        with self._lock:
            self._db.execute("DELETE FROM bootstrap_tokens WHERE cluster=?", (cluster,))
