"""SQLite storage (WAL mode): the embedded default, one process on one disk.

One connection per thread; writers are serialised by a process lock plus
``BEGIN IMMEDIATE`` so a read-check-write inside :meth:`SQLiteStorage.write` is atomic.
``synchronous=NORMAL`` in WAL mode survives a killed process (only an OS crash or
power loss can drop the last transactions; ``durable`` makes it ``FULL``). Opening a
database made by an earlier version adds the columns it lacks (:data:`ADDED_COLUMNS`).
The file itself: :mod:`.dbfile`.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from . import dbfile
from .queries import READ_NOTHING, Reader, ReadFirst, SearchValue
from .writes import Writer

IDLE_CONNECTIONS = 4
"""Transaction connections kept open for the next write or snapshot."""


class SQLiteDialect:
    """SQLite's JSON functions for searches; entries are stored as text only."""

    def search_condition(self, path: str, kind: str,
                         value: SearchValue) -> tuple[str, list[object]]:
        """See :class:`~.queries.Dialect`."""
        if kind == "missing":
            return "json_type(json, ?) IS NULL", [path]
        if kind == "number":
            return ("json_type(json, ?) IN ('integer', 'real') AND json_extract(json, ?) = ?",
                    [path, path, value])
        if kind == "text" and isinstance(value, str) and "\x00" in value:
            return "1", []  # SQLite's JSON text stops at a NUL: the caller checks these
        if kind == "text":
            return "json_type(json, ?) = 'text' AND json_extract(json, ?) = ?", [path, path, value]
        return "json_type(json, ?) = ?", [path, kind]

    def config_upsert(self, app: str, obj: str, json_text: str,
                      etag: str) -> tuple[str, list[object]]:
        """See :class:`~.queries.Dialect`."""
        return ("INSERT INTO config (app, object, json, etag) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (app, object) DO UPDATE SET json = excluded.json, "
                "etag = excluded.etag", [app, obj, json_text, etag])

    def searchable_fallback(self) -> str:
        """SQLite evaluates every entry."""
        return "0"


class SQLiteSql:
    """Statements on one SQLite connection."""

    dialect = SQLiteDialect()

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def rows(self, sql: str, args: Sequence[object] = ()) -> list[tuple]:
        """All result rows."""
        return self.conn.execute(sql, args).fetchall()

    def one(self, sql: str, args: Sequence[object] = ()) -> tuple | None:
        """The first result row, or None."""
        return self.conn.execute(sql, args).fetchone()

    def count(self, sql: str, args: Sequence[object] = ()) -> int:
        """Run a mutation; the number of rows it touched."""
        return self.conn.execute(sql, args).rowcount

    def execute(self, sql: str, args: Sequence[object] = ()) -> None:
        """Run a mutation now."""
        self.conn.execute(sql, args)

    def many(self, sql: str, args: Iterable[Sequence[object]]) -> None:
        """Run one statement for each argument tuple."""
        self.conn.executemany(sql, args)


ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("principal", "previous_hash", "TEXT"),
    ("principal", "previous_until", "REAL"),
)
"""``(table, column, type)`` added after a table's first version; ``schema.sql`` has them."""


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    """Bring a database made by an earlier version up to date (idempotent, atomic)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for table, column, kind in ADDED_COLUMNS:
            present = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            if column not in present:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _initialise(conn: sqlite3.Connection) -> None:
    """WAL mode, the tables, and the columns a database from an earlier version lacks."""
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(resources.files(__package__).joinpath("schema.sql").read_text())
    _add_missing_columns(conn)


class SQLiteStorage:
    """The Config Store's durable state in one SQLite file (made and checked by
    :mod:`.dbfile`: private, never an empty or corrupt file taken for a store)."""

    replicated = False
    """One process owns the file: no other replica's changes to follow."""
    queued: Callable[[], bool] | None = None
    """Set by the domain as on any storage, but unused: a local commit is cheap, nothing is
    held back."""

    def __init__(self, path: Path, durable: bool = False) -> None:
        self.path = path
        self._synchronous = "FULL" if durable else "NORMAL"
        self.description = f"sqlite:///{path}"
        self._readers: dict[int, sqlite3.Connection] = {}
        self._idle: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._write_lock = threading.Lock()
        dbfile.prepare(path, _initialise)
        try:
            # checked on a bare connection: switching to WAL would rewrite the header of
            # a file that is then refused, which stays as it was for the operator
            conn = sqlite3.connect(path, isolation_level=None)
            try:
                dbfile.check(conn, path)
                _initialise(conn)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise dbfile.refusal(
                path, f"is not a usable database ({dbfile.sqlite_reason(exc)})") from None

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                               timeout=30.0)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self._synchronous}")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def _reader_conn(self) -> sqlite3.Connection:
        """The connection of this OS thread, for single autocommit statements only.

        Keyed by the OS thread, not ``threading.local``: under gevent that is one per
        greenlet, so 10,000 keep-alive clients held 10,000 connections (and ran out of
        file descriptors). Greenlets of one thread may share it: a statement runs to its end
        without yielding, and no transaction is ever left open on it.
        """
        thread = threading.get_native_id()
        conn = self._readers.get(thread)
        if conn is None:
            conn = self._connect()
            with self._conns_lock:
                conn = self._readers.setdefault(thread, conn)
        return conn

    @contextmanager
    def _borrowed(self) -> Iterator[sqlite3.Connection]:
        """A connection of its own for one transaction, kept for the next when returned."""
        with self._conns_lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._connect()
        try:
            yield conn
        finally:
            with self._conns_lock:
                keep = len(self._idle) < IDLE_CONNECTIONS
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()

    def reader(self) -> Reader:
        """Queries on this thread's connection (autocommit snapshot per statement)."""
        return Reader(SQLiteSql(self._reader_conn()))

    @contextmanager
    def snapshot(self, first: ReadFirst = READ_NOTHING) -> Iterator[Reader]:
        """Queries that all see one state of the database (``first`` read when asked)."""
        with self._borrowed() as conn:
            conn.execute("BEGIN")
            try:
                yield Reader(SQLiteSql(conn))
            finally:
                conn.execute("COMMIT")

    @contextmanager
    def write(self, entry: tuple[str, str] | None = None, *,
              first: ReadFirst = READ_NOTHING) -> Iterator[Writer]:
        """One serialised write transaction; rolled back if the block raises (``entry`` and
        ``first`` are read when the block asks: a local read costs no round trip)."""
        with self._write_lock, self._borrowed() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield Writer(SQLiteSql(conn))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def flush(self) -> None:
        """Nothing is held back: every write commits as its block ends."""

    def close(self) -> None:
        """Close the connections held (the process is done with the database)."""
        with self._conns_lock:
            held = [*self._readers.values(), *self._idle]
            self._readers, self._idle = {}, []
        for conn in held:
            conn.close()
