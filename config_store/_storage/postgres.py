"""PostgreSQL storage: several Config Store replicas on one database.

Reads borrow a pooled connection per statement (autocommit); writes are serialised across
every replica by a transaction-scoped advisory lock, so a read-check-write inside
:meth:`PostgresStorage.write` (``If-Match``, uniqueness checks) holds as on SQLite, and the
change log's sequence numbers follow commit order. Each write appends what it changed to
``change_log`` and wakes the other replicas with ``NOTIFY`` (payload: the writer's id, never
a body); :mod:`.pgfeed` reads it back.

The pool is opened lazily in the process that uses it: the gunicorn master opens the store,
then forks the worker, which must not share the master's connections (:meth:`close` before
the fork, and a pool made in another process is never used).
"""

from __future__ import annotations

import functools
import json
import os
import time
import uuid as uuidlib
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol

import psycopg
import psycopg_pool
from psycopg.types.json import Jsonb

from serving.dburl import redacted

from . import migrations, pgwait
from .dbfile import UnusableDatabase
from .errors import StorageUnavailable
from .queries import ENTRY_QUERY, Reader, Writer
from .rows import Change

WRITE_LOCK = 0x66706C7573_00
"""``pg_advisory_xact_lock`` key every write transaction holds (``fplus`` + 0)."""
CHANNEL = "fplus_config_store"
"""The ``LISTEN``/``NOTIFY`` channel of committed changes."""
CONNECT_TIMEOUT_S = 5
POOL_TIMEOUT_S = 5.0
"""How long a request waits for a connection before answering 503."""
BREAK_S = 1.0
"""After the database failed, how long requests answer 503 at once instead of waiting
(writes queued behind a failed one get their 503 together, not one pool timeout each)."""
WRITE_BLOCK_S = 0.005
"""How long a write's wait for the database may block the process before it lets other
requests run (:mod:`.pgwait`)."""


@functools.lru_cache(maxsize=256)
def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


class Follower(Protocol):
    """Follows the change log (:class:`config_store._domain.replication.Replication`)."""

    def changes_query(self) -> tuple[str, Sequence[Any]]:
        """A statement (``%s`` placeholders) reading the changes it has not applied yet, and
        its arguments."""

    def committed_before(self, rows: list[tuple]) -> None:
        """Apply the rows of :meth:`changes_query` (more may follow: read them too)."""

    def wrote(self, seq: int) -> None:
        """A write it had caught up for committed, its last change being ``seq``."""


class PgDialect:
    """JSONB for searches; entries stored as canonical text plus a JSONB copy."""

    def search_condition(self, path: str, kind: str, value: Any) -> tuple[str, list[Any]]:
        """See :class:`~.queries.Dialect`: ``doc #> path`` compared as JSONB (numbers
        compare by value, so ``1`` equals ``1.0``; a string never equals a number)."""
        keys = path.removeprefix("$.").split(".")
        if kind == "missing":
            return "doc #> ? IS NULL", [keys]
        if kind in ("true", "false", "null"):
            return "doc #> ? = ?::jsonb", [keys, kind]
        if kind == "text" and "\x00" in value:
            return "FALSE", []  # only documents without JSONB (the fallback) can hold one
        return "doc #> ? = ?::jsonb", [keys, Jsonb(value)]

    def config_upsert(self, app: str, obj: str, json_text: str,
                      etag: str) -> tuple[str, list[Any]]:
        """See :class:`~.queries.Dialect`."""
        searchable = "\\u0000" not in json_text  # JSONB holds no NUL character
        return ("INSERT INTO config (app, object, json, doc, etag) "
                "VALUES (?, ?, ?, ?::jsonb, ?) ON CONFLICT (app, object) DO UPDATE SET "
                "json = excluded.json, doc = excluded.doc, etag = excluded.etag",
                [app, obj, json_text, json_text if searchable else None, etag])

    def searchable_fallback(self) -> str:
        """Entries without a JSONB copy are returned for the caller to check."""
        return "doc IS NULL"


def _unavailable(exc: Exception) -> StorageUnavailable:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StorageUnavailable(f"the database is unavailable: {reason}")


@contextmanager
def _translated() -> Iterator[None]:
    """Connection-level failures as :class:`StorageUnavailable`; others as they are."""
    try:
        yield
    except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
        raise _unavailable(exc) from None


def _result(cur: psycopg.Cursor, fetch: str) -> Any:
    if fetch == "all":
        return cur.fetchall()
    if fetch == "one":
        return cur.fetchone()
    return cur.rowcount


class PgSql:
    """Statements each on a connection borrowed from the pool (autocommit)."""

    dialect = PgDialect()

    def __init__(self, borrow: Callable[[], AbstractContextManager[psycopg.Connection]]) -> None:
        self._borrow = borrow

    def _run(self, sql: str, args: Sequence[Any], fetch: str) -> Any:
        with _translated(), self._borrow() as conn:
            return _result(conn.execute(_pg(sql), args), fetch)

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        """All result rows."""
        return self._run(sql, args, "all")

    def one(self, sql: str, args: Sequence[Any] = ()) -> tuple | None:
        """The first result row, or None."""
        return self._run(sql, args, "one")

    def count(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run a mutation; the number of rows it touched."""
        return self._run(sql, args, "count")

    def execute(self, sql: str, args: Sequence[Any] = ()) -> None:
        """Run a mutation."""
        self._run(sql, args, "none")

    def many(self, sql: str, args: Iterable[Sequence[Any]]) -> None:
        """Run one statement for each argument tuple."""
        with _translated(), self._borrow() as conn:
            conn.cursor().executemany(_pg(sql), list(args))


PREPARED_PER_CONNECTION = 64
"""How many statements a connection keeps prepared for batches (texts beyond are bound
client-side each time: search conditions vary)."""
_prepared: weakref.WeakKeyDictionary[psycopg.Connection, dict[str, str]] = \
    weakref.WeakKeyDictionary()
"""Per connection: statement text → the name it is prepared under (``PREPARE``)."""


def _numbered(sql: str) -> str:
    """``%s`` placeholders as ``$1``, ``$2``… (``PREPARE``'s)."""
    parts = sql.split("%s")
    return "".join(f"{part}${n}" for n, part in enumerate(parts[:-1], 1)) + parts[-1]


class PgTransactionSql(PgSql):
    """The statements of one transaction on one connection. Mutations nobody reads are held
    and sent with the next statement waited for (a read, or the commit): several statements
    go as one query, one round trip and one driver call for them all. Each is prepared on
    the connection the first time (``PREPARE``) and run as ``EXECUTE`` with its arguments
    bound client-side, so the server plans it once. (psycopg's own preparing is off on
    these connections: it ends with ``DEALLOCATE ALL`` after any ``ROLLBACK``.)"""

    def __init__(self, conn: psycopg.Connection) -> None:
        super().__init__(lambda: nullcontext(conn))
        self.conn = conn
        self._held: list[tuple[str, Sequence[Any]]] = []

    def execute(self, sql: str, args: Sequence[Any] = ()) -> None:
        """Hold a mutation until the next statement that is waited for."""
        self._held.append((_pg(sql), args))

    def _run(self, sql: str, args: Sequence[Any], fetch: str) -> Any:
        with _translated():
            return _result(self.send([(_pg(sql), args)]), fetch)

    def many(self, sql: str, args: Iterable[Sequence[Any]]) -> None:
        """Run one statement for each argument tuple (after the held ones)."""
        self.send([])
        super().many(sql, args)

    def send(self, statements: list[tuple[str, Sequence[Any]]]) -> psycopg.Cursor:
        """Send the held mutations, then ``statements`` (``%s`` placeholders), in one query;
        the cursor, on the first result of ``statements`` (:meth:`~psycopg.Cursor.nextset`
        for the next). A connection whose batch failed is closed (what it has prepared is
        then unknown): the pool replaces it."""
        queue, self._held = [*self._held, *statements], []
        cur = psycopg.ClientCursor(self.conn)
        if queue:
            prepares, runs, args = self._batch(queue)
            try:
                cur.execute("; ".join([*prepares, *runs]), args)
            except psycopg.Error:
                self.conn.close()
                raise
            for _ in range(len(prepares) + len(queue) - len(statements)):
                cur.nextset()
        return cur

    def _batch(self, queue: list[tuple[str, Sequence[Any]]]
               ) -> tuple[list[str], list[str], list[Any]]:
        """The ``PREPARE``s the connection lacks, then one statement per queued one (an
        ``EXECUTE`` where prepared), and their arguments."""
        names = _prepared.setdefault(self.conn, {})
        prepares: list[str] = []
        runs: list[str] = []
        args: list[Any] = []
        for sql, params in queue:
            name = names.get(sql)
            if name is None and params and len(names) < PREPARED_PER_CONNECTION:
                name = names[sql] = f"fplus_{len(names)}"
                prepares.append(f"PREPARE {name} AS {_numbered(sql)}")
            runs.append(sql if name is None
                        else f"EXECUTE {name}({', '.join(['%s'] * len(params))})")
            args.extend(params)
        return prepares, runs, args


def _check_server(conn: psycopg.Connection) -> None:
    encoding = conn.execute("SHOW server_encoding").fetchone()
    if encoding is None or encoding[0].upper() not in ("UTF8", "UTF-8"):
        raise UnusableDatabase(f"has server encoding {encoding and encoding[0]}; the Config "
                               "Store needs UTF8 (createdb -E UTF8)")


class PostgresStorage:
    """The Config Store's durable state in a PostgreSQL database shared by its replicas."""

    replicated = True
    """Other replicas may write: follow :attr:`CHANNEL` through :mod:`.pgfeed`."""

    def __init__(self, url: str, pool_size: int = 10, durable: bool = False) -> None:
        self.url = url
        self.description = redacted(url)
        self.origin = uuidlib.uuid4().hex
        """This store's id in the change log: a replica skips its own changes."""
        self.pool_size = pool_size
        self._synchronous_commit = "on" if durable else "off"
        self._pool: psycopg_pool.ConnectionPool | None = None
        self._pool_pid = 0
        self._broken_until = 0.0
        self._broken_reason = ""
        self._local_lock: Any = None
        self.follower: Follower | None = None
        """Told, once a write holds the lock and before its block runs, of every change
        committed before it (read in the same round trip as taking the lock), so the replica
        catches up first (:mod:`config_store._domain.replication`)."""
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as c:
                _check_server(c)
                migrations.migrate(c)
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            raise UnusableDatabase(f"cannot use the database {self.description}: "
                                   f"{reason}") from None
        except (UnusableDatabase, migrations.NewerSchema) as exc:
            raise UnusableDatabase(f"the database {self.description} {exc}") from None

    def connect(self, **options: Any) -> psycopg.Connection:
        """A connection of its own (not pooled), e.g. to ``LISTEN`` on."""
        with _translated():
            return psycopg.connect(self.url, autocommit=True,
                                   connect_timeout=CONNECT_TIMEOUT_S, **options)

    def _connections(self) -> psycopg_pool.ConnectionPool:
        if self._pool is None or self._pool_pid != os.getpid():
            import threading  # after gevent's patching, in the worker

            self._local_lock = threading.Lock()
            self._pool = psycopg_pool.ConnectionPool(
                self.url, min_size=1, max_size=self.pool_size, timeout=POOL_TIMEOUT_S,
                connection_class=pgwait.PooledConnection,
                kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S,
                        "prepare_threshold": None},  # ours: see PgTransactionSql
                configure=self._configure, name="config-store", open=True)
            self._pool_pid = os.getpid()
        return self._pool

    @contextmanager
    def _borrow(self) -> Iterator[psycopg.Connection]:
        """A pooled connection; :class:`StorageUnavailable` at once while the database was
        found unreachable less than :data:`BREAK_S` ago."""
        if time.monotonic() < self._broken_until:
            raise StorageUnavailable(self._broken_reason)
        try:
            with _translated(), self._connections().connection() as conn:
                yield conn
        except StorageUnavailable as exc:
            self._broken_until = time.monotonic() + BREAK_S
            self._broken_reason = str(exc)
            raise

    def _configure(self, conn: psycopg.Connection) -> None:
        """Each pooled connection: commits as durable as SQLite's (see
        :func:`~config_store._storage.open_storage`)."""
        conn.execute(f"SET synchronous_commit = {self._synchronous_commit}")

    def reader(self) -> Reader:
        """Queries, each on a pooled connection (autocommit)."""
        return Reader(PgSql(self._borrow))

    @contextmanager
    def snapshot(self) -> Iterator[Reader]:
        """Queries that all see one state of the database (REPEATABLE READ)."""
        with self._borrow() as conn, _translated(), conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield Reader(PgSql(lambda: nullcontext(conn)))

    @contextmanager
    def write(self, entry: tuple[str, str] | None = None) -> Iterator[Writer]:
        """One write transaction, serialised with every other replica's; rolled back if the
        block raises. What it changed is logged and announced when it commits. Two round
        trips for a read-check-write of ``entry``: the lock with the read, then the writes
        with the commit. Their waits block the process first (:mod:`.pgwait`), so the lock
        is held for the database's answers, not for other requests' work as well."""
        self._connections()  # the local lock is made with the pool, in this process
        with self._local_lock, self._borrow() as conn, \
                pgwait.blocking_waits(conn, WRITE_BLOCK_S):
            sql = PgTransactionSql(conn)
            try:
                writer = Writer(sql, self._begin(sql, entry))
                yield writer
                log = [self._log(writer.changes)] if writer.changes else []
                cur = sql.send([*log, ("COMMIT", ())])
            except BaseException:
                try:
                    conn.execute("ROLLBACK")
                except psycopg.Error:
                    conn.close()  # in no known state: the pool replaces it
                raise
            if log and self.follower is not None:
                row = cur.fetchone()
                self.follower.wrote(int(row[0]) if row and row[0] is not None else 0)

    def _begin(self, sql: PgTransactionSql, entry: tuple[str, str] | None
               ) -> tuple[tuple[str, str], Sequence[Any] | None] | None:
        """One round trip: the transaction, its place in line, (with a follower) what was
        committed before it, and ``entry``'s row as the lock found it."""
        statements: list[tuple[str, Sequence[Any]]] = [
            ("BEGIN", ()), (f"SELECT pg_advisory_xact_lock({WRITE_LOCK})", ())]
        if self.follower is not None:
            statements.append(self.follower.changes_query())
        if entry is not None:
            statements.append((_pg(ENTRY_QUERY), entry))
        cur = sql.send(statements)
        cur.nextset()  # the lock
        if self.follower is not None:
            cur.nextset()
            self.follower.committed_before(cur.fetchall())
        if entry is None:
            return None
        cur.nextset()
        return entry, cur.fetchone()

    def _log(self, changes: list[Change]) -> tuple[str, Sequence[Any]]:
        """The statement appending ``changes`` to the log and announcing them; its one row
        is the last seq written. The changes travel as one JSON array (one parameter to
        bind, whatever their number)."""
        rows = json.dumps([[c.kind, c.a, c.b, c.etag] for c in changes])
        return ("WITH logged AS (INSERT INTO change_log (origin, kind, a, b, etag) "
                "SELECT %s::text, c->>0, c->>1, c->>2, c->>3 "
                "FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS t(c, n) ORDER BY n "
                "RETURNING seq) SELECT max(seq), pg_notify(%s::text, %s::text) FROM logged",
                (self.origin, rows, CHANNEL, self.origin))

    def close(self) -> None:
        """Close this process's pool (it is made again on next use)."""
        if self._pool is not None and self._pool_pid == os.getpid():
            self._pool.close()
        self._pool = None
