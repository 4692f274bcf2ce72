"""PostgreSQL storage: several Config Store replicas on one database.

Reads borrow a pooled connection per statement (autocommit); writes are serialised across
every replica by a transaction-scoped advisory lock, so a read-check-write inside
:meth:`PostgresStorage.write` (``If-Match``, uniqueness checks) holds as on SQLite, and the
change log's sequence numbers follow commit order. Each write appends what it changed to
``change_log`` and wakes the other replicas with ``NOTIFY`` (payload: the writer's id, never
a body; none while no other replica listens); :mod:`.change_feed` reads it back.

The pool is opened lazily in the process that uses it: the gunicorn master opens the store,
then forks the worker, which must not share the master's connections (:meth:`close` before
the fork, and a pool made in another process is never used).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
import uuid as uuidlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Protocol

import psycopg
import psycopg_pool

from fplus.serving.db.dburl import redacted

from ..dbfile import UnusableDatabase
from ..errors import StorageBusy, StorageUnavailable, first_line
from ..queries import READ_NOTHING, Read, Reader, ReadFirst
from ..rows import Change
from ..writes import Writer
from . import green_wait, group_commit, migrations
from .statements import PgSql, PgTransactionSql, pg, translated

if TYPE_CHECKING:
    import threading

WRITE_LOCK = 0x66706C7573_00
"""``pg_advisory_xact_lock`` key every write transaction holds (``fplus`` + 0)."""
CHANNEL = "fplus_config_store"
"""The ``LISTEN``/``NOTIFY`` channel of committed changes."""
CONNECT_TIMEOUT_S = 5
POOL_TIMEOUT_S = 5.0
"""How long a request waits for a connection before answering 503."""
BREAK_S = 1.0
"""After the database failed, how long requests answer 503 at once instead of waiting
(writes queued behind a failed one get their 503 together, not one pool timeout each). A
wait for a connection that times out while the pool holds all of them, all in use, is
congestion, not a failure: that request gets its 503 and the breaker stays closed."""





class Follower(Protocol):
    """Follows the change log (:class:`fplus.config_store._domain.core.replication.Replication`)."""

    def changes_query(self) -> tuple[str, Sequence[object]]:
        """A statement (``%s`` placeholders) reading the changes it has not applied yet, and
        its arguments."""

    def committed_before(self, rows: list[tuple]) -> None:
        """Apply the rows of :meth:`changes_query` (more may follow: read them too)."""

    def wrote(self, seq: int) -> None:
        """A write it had caught up for committed, its last change being ``seq``."""


def _check_server(conn: psycopg.Connection) -> None:
    encoding = conn.execute("SHOW server_encoding").fetchone()
    if encoding is None or encoding[0].upper() not in ("UTF8", "UTF-8"):
        raise UnusableDatabase(f"has server encoding {encoding and encoding[0]}; the Config "
                               "Store needs UTF8 (createdb -E UTF8)")


class PostgresStorage:
    """The Config Store's durable state in a PostgreSQL database shared by its replicas."""

    replicated = True
    """Other replicas may write: follow :attr:`CHANNEL` through :mod:`.change_feed`."""

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
        self._local_lock: threading.Lock | None = None
        self._group: group_commit.Group | None = None
        """The transaction writes held back their commit in (see :mod:`.group_commit`)."""
        self.queued: Callable[[], bool] | None = None
        """Set by the domain: whether another write waits to begin."""
        self.others_listening = True
        """Whether another replica may listen to :data:`CHANNEL`: when not (its change feed
        counted no other listener), commits skip the ``NOTIFY`` that would wake only itself."""
        self.follower: Follower | None = None
        """Told, once a write holds the lock and before its block runs, of every change
        committed before it (read in the same round trip as taking the lock), so the replica
        catches up first (:mod:`fplus.config_store._domain.core.replication`)."""
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as c:
                _check_server(c)
                migrations.migrate(c)
        except psycopg.Error as exc:
            reason = first_line(exc) or repr(exc)
            raise UnusableDatabase(f"cannot use the database {self.description}: "
                                   f"{reason}") from None
        except (UnusableDatabase, migrations.NewerSchema) as exc:
            raise UnusableDatabase(f"the database {self.description} {exc}") from None

    def connect(self, *, application_name: str) -> psycopg.Connection:
        """A connection of its own (not pooled), e.g. to ``LISTEN`` on."""
        with translated():
            return psycopg.connect(self.url, autocommit=True,
                                   connect_timeout=CONNECT_TIMEOUT_S,
                                   application_name=application_name)

    def _connections(self) -> psycopg_pool.ConnectionPool:
        if self._pool is None or self._pool_pid != os.getpid():
            import threading  # after gevent's patching, in the worker

            green_wait.install()
            self._local_lock = threading.Lock()
            self._pool = psycopg_pool.ConnectionPool(
                self.url, min_size=1, max_size=self.pool_size, timeout=POOL_TIMEOUT_S,
                kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S,
                        "prepare_threshold": None},  # ours: see PgTransactionSql
                configure=self._configure, name="config-store", open=True)
            self._pool_pid = os.getpid()
        return self._pool

    def _lock(self) -> threading.Lock:
        """This process's lock on writes (made with its pool)."""
        self._connections()
        if self._local_lock is None:
            raise RuntimeError("no write lock: the pool was not made")
        return self._local_lock

    @contextmanager
    def _borrow(self) -> Iterator[psycopg.Connection]:
        """A pooled connection; :class:`StorageUnavailable` at once while the database was
        found unreachable less than :data:`BREAK_S` ago."""
        if time.monotonic() < self._broken_until:
            raise StorageUnavailable(self._broken_reason)
        pool = self._connections()
        with self._breaking(), _busy_refused(pool), pool.connection() as conn:
            yield conn

    @contextmanager
    def _breaking(self) -> Iterator[None]:
        """Connection failures as :class:`StorageUnavailable`, which also opens the breaker
        (see :data:`BREAK_S`)."""
        try:
            with translated():
                yield
        except StorageBusy:
            raise
        except StorageUnavailable as exc:
            now = time.monotonic()
            if now >= self._broken_until:  # not the breaker's own refusal: no extension
                self._broken_until = now + BREAK_S
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
    def snapshot(self, first: ReadFirst = READ_NOTHING) -> Iterator[Reader]:
        """Queries that all see one state of the database (REPEATABLE READ). The ``BEGIN``
        goes with the first query (with what ``first`` names, read at once), its end is
        the only other round trip."""
        with self._borrow() as conn, translated():
            sql = PgTransactionSql(conn)
            sql.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            try:
                reads = first.statements()
                read = Read.of(first, _results(sql.send([(pg(q), a) for q, a in reads]),
                                               len(reads))) if reads else None
                yield Reader(sql, read)
            finally:
                _end_reads(conn)

    @contextmanager
    def write(self, entry: tuple[str, str] | None = None, *,
              first: ReadFirst = READ_NOTHING) -> Iterator[Writer]:
        """One write transaction, serialised with every other replica's; rolled back if the
        block raises. What it changed is logged and announced when it commits. Two round
        trips for a read-check-write of ``entry`` (and of ``first``, e.g. what a batch's
        operations read): the lock with the reads, then the writes with the commit. With
        writes queued behind it, the commit may be shared with them (:mod:`.group_commit`)."""
        if entry is not None and entry not in first.entries:
            first = dataclasses.replace(first, entries=(entry, *first.entries))
        wanted = first
        with self._lock(), self._breaking():
            group, savepoint = self._group, None
            if group is None:
                group = self._open()
                read = self._started(group, lambda: self._begin(group.sql, wanted))
            else:
                savepoint = group.next_savepoint()
                read = self._started(group, lambda: self._join(group, savepoint, wanted))
            writer = Writer(group.sql, read)
            try:
                yield writer
            except BaseException as exc:
                if savepoint is None:
                    self._abort(group, exc)
                else:  # undo its own statements; the writes before it commit
                    group.sql.execute(f"ROLLBACK TO SAVEPOINT {savepoint}")
                    with contextlib.suppress(Exception):  # they are told if it fails
                        self._commit(group, [])
                raise
            if writer.after_commit is not None and len(group.deferred) < group_commit.MAX_DEFERRED \
                    and self.queued is not None and self.queued():
                if savepoint is not None:
                    group.sql.execute(f"RELEASE SAVEPOINT {savepoint}")
                held = group_commit.Deferred(writer.changes, writer.after_commit)
                group.deferred.append(held)
                writer.outcome = held.outcome
                self._group = group
                return
            self._commit(group, writer.changes)

    def flush(self) -> None:
        """Commit the writes whose commit is held back for a group, if any."""
        with self._lock(), self._breaking():
            if self._group is not None:
                self._commit(self._group, [])

    def _open(self) -> group_commit.Group:
        """A new group: a transaction's connection (returned when the group ends)."""
        resources = ExitStack()
        conn = resources.enter_context(self._borrow())
        return group_commit.Group(PgTransactionSql(conn), resources)

    def _started(self, group: group_commit.Group, start: Callable[[], Read]) -> Read:
        """``start()``'s read; the group failed and closed if it raises."""
        try:
            return start()
        except BaseException as exc:
            self._abort(group, exc)
            raise

    def _join(self, group: group_commit.Group, savepoint: str, first: ReadFirst) -> Read:
        """A write joining an open group: its savepoint, and what ``first`` reads (sent
        with the statements of the writes before it that are still held)."""
        group.sql.execute(f"SAVEPOINT {savepoint}")
        reads = first.statements()
        if not reads:
            return Read()
        return Read.of(first, _results(group.sql.send([(pg(q), a) for q, a in reads]),
                                       len(reads)))

    def _commit(self, group: group_commit.Group, changes: list[Change]) -> None:
        """Commit the group with the last write's ``changes``: one change-log insert and
        ``NOTIFY`` for all; then the held-back writes' ``after_commit``, in order."""
        self._group = None
        logged = group.changes() + changes
        log = [self._log(logged)] if logged else []
        try:
            cur = group.sql.send([*log, ("COMMIT", ())])
        except BaseException as exc:
            self._abort(group, exc)
            raise
        row = cur.fetchone() if log else None
        group.resources.close()
        if log and self.follower is not None:
            self.follower.wrote(int(row[0]) if row and row[0] is not None else 0)
        group.committed()

    def _abort(self, group: group_commit.Group, error: BaseException) -> None:
        """Roll the group's transaction back, return its connection, and fail the writes
        it held back."""
        self._group = None
        conn = group.sql.conn
        try:
            conn.execute("ROLLBACK")
        except psycopg.Error:
            conn.close()  # in no known state: the pool replaces it
        finally:
            group.resources.close()
            group.failed(error)

    def _begin(self, sql: PgTransactionSql, first: ReadFirst) -> Read:
        """One round trip: the transaction, its place in line, (with a follower) what was
        committed before it, and what ``first`` reads as the lock found it."""
        statements: list[tuple[str, Sequence[object]]] = [
            ("BEGIN", ()), (f"SELECT pg_advisory_xact_lock({WRITE_LOCK})", ())]
        if self.follower is not None:
            statements.append(self.follower.changes_query())
        reads = first.statements()
        statements += [(pg(q), a) for q, a in reads]
        cur = sql.send(statements)
        cur.nextset()  # the lock
        if self.follower is not None:
            cur.nextset()
            self.follower.committed_before(cur.fetchall())
        if not reads:
            return Read()
        cur.nextset()
        return Read.of(first, _results(cur, len(reads)))

    def _log(self, changes: list[Change]) -> tuple[str, Sequence[object]]:
        """The statement appending ``changes`` to the log and announcing them (unless no
        other replica listens); its one row is the last seq written. The changes travel as
        one JSON array (one parameter to bind, whatever their number)."""
        rows = json.dumps([[c.kind, c.a, c.b, c.etag] for c in changes])
        return ("WITH logged AS (INSERT INTO change_log (origin, kind, a, b, etag) "
                "SELECT %s::text, c->>0, c->>1, c->>2, c->>3 "
                "FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS t(c, n) ORDER BY n "
                "RETURNING seq) SELECT max(seq), "
                "CASE WHEN %s::boolean THEN pg_notify(%s::text, %s::text) END FROM logged",
                (self.origin, rows, self.others_listening, CHANNEL, self.origin))

    def close(self) -> None:
        """Close this process's pool (it is made again on next use)."""
        if self._pool is not None and self._pool_pid == os.getpid():
            self._pool.close()
        self._pool = None


def _end_reads(conn: psycopg.Connection) -> None:
    """End a transaction that only read, if it began (``ROLLBACK`` ends it as a ``COMMIT``
    would); a connection that cannot is closed (the pool replaces it)."""
    if conn.closed or conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        return
    try:
        conn.execute("ROLLBACK")
    except psycopg.Error:
        conn.close()


def _results(cur: psycopg.Cursor, count: int) -> list[list[tuple]]:
    """The rows of ``count`` statements' results, from the cursor on the first of them."""
    results = [cur.fetchall()]
    for _ in range(count - 1):
        cur.nextset()
        results.append(cur.fetchall())
    return results


@contextmanager
def _busy_refused(pool: psycopg_pool.ConnectionPool) -> Iterator[None]:
    """A wait for a connection that times out while the pool has all it may have (all in
    use) as :class:`StorageBusy`; one timing out short of that (connections failing to open)
    stays a failure."""
    try:
        yield
    except psycopg_pool.PoolTimeout:
        if pool.get_stats().get("pool_size", 0) < pool.max_size:
            raise
        raise StorageBusy(f"the database's {pool.max_size} connections stayed in use for "
                          f"{pool.timeout:g} s (--database-pool)") from None
