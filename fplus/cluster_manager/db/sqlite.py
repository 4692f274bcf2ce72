"""The database in a private SQLite file (one machine; the default in the data dir).

The file (and its ``-wal``/``-shm``) is private to the service: created 0600, tightened to
0600 if found looser. An empty (0-byte) or corrupt file is refused with one line rather than
silently replaced, and is left as it was. One connection per process, opened on first use
(never carried across a fork), serialised by a lock; several processes on one machine may
share the file (SQLite's own locking, with a busy timeout).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fplus.serving.db.privatedb import create_aside, tighten

from .base import Database, DatabaseError, DatabaseUnavailable, Params

BUSY_TIMEOUT = 5.0
"""Seconds a statement waits for another process's write lock on the file."""
LEGACY_TABLES = {"bootstrap_tokens": "cm_bootstrap_tokens"}
"""Tables of files made before every table had the ``cm_`` prefix: renamed at start."""


def _words(exc: BaseException) -> str:
    return " ".join(str(exc).split())


class SqliteDatabase(Database):
    """A SQLite file (see the module docstring)."""

    dialect = "sqlite"
    now = "(julianday('now') - 2440587.5) * 86400.0"

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.description = str(self.path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0

    def _refuse(self, why: str) -> DatabaseError:
        return DatabaseError(
            f"the Cluster Manager database {self.path} {why}; move it aside to start without "
            "it (bootstrap URLs handed out before then stop working)")

    def prepare(self, schema: Sequence[str]) -> None:
        path = self.path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                create_aside(path, lambda db: self._create(db, schema))
            if path.stat().st_size == 0:
                raise self._refuse("is empty (0 bytes), not a SQLite database")
            tighten(path)
            db = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT)
        except OSError as exc:
            raise self._refuse(f"cannot be opened ({exc.strerror or exc})") from None
        except sqlite3.Error as exc:
            raise self._refuse(f"cannot be opened ({_words(exc)})") from None
        try:
            db.execute("PRAGMA journal_mode=WAL")
            check = db.execute("PRAGMA quick_check").fetchone()
            if check is None or check[0] != "ok":
                raise self._refuse(
                    f"is corrupt (quick check: {check[0] if check else 'no answer'})")
            self._create(db, schema)
        except sqlite3.Error as exc:
            raise self._refuse(f"is not a usable SQLite database ({_words(exc)})") from None
        finally:
            db.close()
        tighten(path)  # -wal/-shm made just now take the database's mode; older ones are fixed

    @staticmethod
    def _create(db: sqlite3.Connection, schema: Sequence[str]) -> None:
        db.execute("PRAGMA journal_mode=WAL")
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master "
                                                "WHERE type='table'")}
        for old, new in LEGACY_TABLES.items():
            if old in tables and new not in tables:
                db.execute(f"ALTER TABLE {old} RENAME TO {new}")
        for statement in schema:
            db.execute(statement)

    def _connection(self) -> sqlite3.Connection:
        """This process's connection (call with the lock held)."""
        if self._conn is None or self._pid != os.getpid():
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                   timeout=BUSY_TIMEOUT)
            conn.execute("PRAGMA synchronous=NORMAL")  # a lost token on power loss is harmless
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def _run(self, sql: str, params: Params) -> sqlite3.Cursor:
        try:
            return self._connection().execute(self.sql(sql), tuple(params))
        except sqlite3.Error as exc:
            raise DatabaseUnavailable(f"the database {self.path} failed: {_words(exc)}") \
                from exc

    def execute(self, sql: str, params: Params = ()) -> int:
        with self._lock:
            return self._run(sql, params).rowcount

    def fetchone(self, sql: str, params: Params = ()) -> tuple[Any, ...] | None:
        with self._lock:
            return self._run(sql, params).fetchone()

    def fetchall(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._run(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
            self._conn = None
