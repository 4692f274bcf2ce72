"""One-time bootstrap tokens: issued per cluster, stored hashed, expiring, single use.

A new token for a cluster replaces the previous one (which then fails as unknown). Tokens
live in a small SQLite file in the data directory, so a restart does not invalidate URLs
already handed out. Only SHA-256 digests are stored; the token itself is shown once.

The file (and its ``-wal``/``-shm``) is private to the service: created 0600, tightened to
0600 if found looser. An empty (0-byte) or corrupt file is refused with
:class:`TokenDatabaseError` rather than silently replaced.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import threading
import time
from pathlib import Path

from serving.privatedb import create_aside, tighten

from .errors import Gone, Unauthorized

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bootstrap_tokens (
    cluster TEXT PRIMARY KEY,
    digest  TEXT NOT NULL,
    expires REAL NOT NULL,
    used    INTEGER NOT NULL DEFAULT 0
)"""


"""Permissions of the token database and its ``-wal``/``-shm`` files."""


class TokenDatabaseError(RuntimeError):
    """The token database cannot be used; the message is one line naming the file."""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()




def _initialise(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(_SCHEMA)


def _refuse(path: Path, why: str) -> TokenDatabaseError:
    return TokenDatabaseError(
        f"the bootstrap token database {path} {why}; move it aside to start without "
        "bootstrap tokens (bootstrap URLs handed out before then stop working)")


def open_database(path: Path) -> sqlite3.Connection:
    """The token database at ``path`` (created if missing), in WAL mode with its table.

    Raises :class:`TokenDatabaseError` when the file is empty (0 bytes), is not a SQLite
    database, fails SQLite's quick check, or cannot be opened.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if not path.exists():
            create_aside(path, _initialise)
        if path.stat().st_size == 0:
            raise _refuse(path, "is empty (0 bytes), not a SQLite database")
        tighten(path)
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    except OSError as exc:
        raise _refuse(path, f"cannot be opened ({exc.strerror or exc})") from None
    except sqlite3.Error as exc:
        raise _refuse(path, f"cannot be opened ({' '.join(str(exc).split())})") from None
    try:
        db.execute("PRAGMA journal_mode=WAL")
        check = db.execute("PRAGMA quick_check").fetchone()
        if check is None or check[0] != "ok":
            raise _refuse(path, f"is corrupt (quick check: {check[0] if check else 'no answer'})")
        db.execute("PRAGMA synchronous=NORMAL")  # a lost token on power loss is harmless
        db.execute(_SCHEMA)
    except sqlite3.Error as exc:
        db.close()
        raise _refuse(path, f"is not a usable SQLite database ({' '.join(str(exc).split())})") \
            from None
    except TokenDatabaseError:
        db.close()
        raise
    tighten(path)  # -wal/-shm made just now take the database's mode; older ones are fixed
    return db


class BootstrapTokens:
    """Issue and redeem bootstrap tokens (thread-safe)."""

    def __init__(self, path: Path, ttl: float = 3600.0) -> None:
        """Open (or create) the database at ``path``; :class:`TokenDatabaseError` if unusable."""
        self.ttl = ttl
        self._lock = threading.Lock()
        self._db = open_database(path)

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
