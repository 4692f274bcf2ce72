"""Statements on PostgreSQL connections: the SQL dialect, single statements on pooled
connections, and a write transaction's batched statements; all prepared once per
connection."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TypeVar

import psycopg
import psycopg_pool
from psycopg import abc
from psycopg.adapt import Transformer
from psycopg.types.json import Jsonb

from ..errors import StorageUnavailable, first_line
from ..queries import SearchValue

T = TypeVar("T")


@functools.lru_cache(maxsize=256)
def pg(sql: str) -> str:
    return sql.replace("?", "%s")


class PgDialect:
    """JSONB for searches; entries stored as canonical text plus a JSONB copy."""

    def search_condition(self, path: str, kind: str,
                         value: SearchValue) -> tuple[str, list[object]]:
        """See :class:`~..queries.Dialect`: ``doc #> path`` compared as JSONB (numbers
        compare by value, so ``1`` equals ``1.0``; a string never equals a number)."""
        keys = path.removeprefix("$.").split(".")
        if kind == "missing":
            return "doc #> ? IS NULL", [keys]
        if kind in ("true", "false", "null"):
            return "doc #> ? = ?::jsonb", [keys, kind]
        if kind == "text" and isinstance(value, str) and "\x00" in value:
            return "FALSE", []  # only documents without JSONB (the fallback) can hold one
        return "doc #> ? = ?::jsonb", [keys, Jsonb(value)]

    def config_upsert(self, app: str, obj: str, json_text: str,
                      etag: str) -> tuple[str, list[object]]:
        """See :class:`~..queries.Dialect`."""
        searchable = "\\u0000" not in json_text  # JSONB holds no NUL character
        return ("INSERT INTO config (app, object, json, doc, etag) "
                "VALUES (?, ?, ?, ?::jsonb, ?) ON CONFLICT (app, object) DO UPDATE SET "
                "json = excluded.json, doc = excluded.doc, etag = excluded.etag",
                [app, obj, json_text, json_text if searchable else None, etag])

    def searchable_fallback(self) -> str:
        """Entries without a JSONB copy are returned for the caller to check."""
        return "doc IS NULL"


def unavailable(exc: Exception) -> StorageUnavailable:
    reason = first_line(exc) or type(exc).__name__
    return StorageUnavailable(f"the database is unavailable: {reason}")


@contextmanager
def translated() -> Iterator[None]:
    """Connection-level failures as :class:`StorageUnavailable`; others as they are."""
    try:
        yield
    except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
        raise unavailable(exc) from None


def _all(cur: psycopg.Cursor) -> list[tuple]:
    return cur.fetchall()


def _one(cur: psycopg.Cursor) -> tuple | None:
    return cur.fetchone()


def _count(cur: psycopg.Cursor) -> int:
    return cur.rowcount


class PgSql:
    """Statements each on a connection borrowed from the pool (autocommit)."""

    dialect = PgDialect()

    def __init__(self, borrow: Callable[[], AbstractContextManager[psycopg.Connection]]) -> None:
        self._borrow = borrow

    def _run(self, sql: str, args: Sequence[object], fetch: Callable[[psycopg.Cursor], T]) -> T:
        with translated(), self._borrow() as conn:
            return fetch(send(conn, [(pg(sql), args)]))

    def rows(self, sql: str, args: Sequence[object] = ()) -> list[tuple]:
        """All result rows."""
        return self._run(sql, args, _all)

    def one(self, sql: str, args: Sequence[object] = ()) -> tuple | None:
        """The first result row, or None."""
        return self._run(sql, args, _one)

    def count(self, sql: str, args: Sequence[object] = ()) -> int:
        """Run a mutation; the number of rows it touched."""
        return self._run(sql, args, _count)

    def execute(self, sql: str, args: Sequence[object] = ()) -> None:
        """Run a mutation."""
        self._run(sql, args, _count)

    def many(self, sql: str, args: Iterable[Sequence[object]]) -> None:
        """Run one statement for each argument tuple."""
        with translated(), self._borrow() as conn:
            conn.cursor().executemany(pg(sql), list(args))


PREPARED_PER_CONNECTION = 64
"""How many statements a connection keeps prepared (texts beyond are bound client-side each
time: search conditions vary)."""
_prepared: weakref.WeakKeyDictionary[psycopg.Connection, dict[str, str]] = \
    weakref.WeakKeyDictionary()
"""Per connection: statement text → the name it is prepared under (``PREPARE``)."""


def _numbered(sql: str) -> str:
    """``%s`` placeholders as ``$1``, ``$2``… (``PREPARE``'s)."""
    parts = sql.split("%s")
    return "".join(f"{part}${n}" for n, part in enumerate(parts[:-1], 1)) + parts[-1]


_BEFORE_ANY_QUERY = "BEGIN ISOLATION"
"""A queue starting so (a read snapshot) sends its ``PREPARE``s first, alone: a transaction's
isolation level is set before any query, and a ``PREPARE`` sent in the same query ahead of
the ``BEGIN`` counts as one."""


def send(conn: psycopg.Connection, queue: list[tuple[str, Sequence[object]]],
         skip: int = 0) -> psycopg.Cursor:
    """Run ``queue`` (``%s`` placeholders) as one query: one round trip, one driver call.
    Each statement with arguments is prepared on the connection the first time
    (``PREPARE``) and run as ``EXECUTE`` with its arguments inlined as literals (as psycopg's
    client-side binding would, but each statement's text split once, not the whole query at
    every call), so the server parses and plans it once (the ``PREPARE``s go first in the
    query; ahead of it, alone, when the queue begins a snapshot). The cursor is on the result
    of statement ``skip`` of the queue (:meth:`~psycopg.Cursor.nextset` for the next). A
    connection whose query failed while preparing is closed (what it has prepared is then
    unknown): the pool replaces it. (psycopg's own preparing is off on these connections:
    it ends with ``DEALLOCATE ALL`` after any ``ROLLBACK``.)"""
    cur = psycopg.ClientCursor(conn)
    if queue:
        prepares, runs = _batch(conn, queue)
        ahead = prepares if runs[0].startswith(_BEFORE_ANY_QUERY.encode()) else []
        try:
            if ahead:  # a round trip of their own, once per connection
                cur.execute(b"; ".join(ahead))
            cur.execute(b"; ".join([*prepares[len(ahead):], *runs]))
        except psycopg.Error:
            if prepares:
                _prepared.pop(conn, None)
                conn.close()
            raise
        for _ in range(len(prepares) - len(ahead) + skip):
            cur.nextset()
    return cur


def _batch(conn: psycopg.Connection, queue: list[tuple[str, Sequence[object]]]
           ) -> tuple[list[bytes], list[bytes]]:
    """The ``PREPARE``s ``conn`` lacks, then one statement per queued one (an ``EXECUTE``
    where prepared), its arguments inlined."""
    names = _prepared.setdefault(conn, {})
    literal = _literals(conn)
    prepares: list[bytes] = []
    runs: list[bytes] = []
    for sql, params in queue:
        name = names.get(sql)
        if name is None and params and len(names) < PREPARED_PER_CONNECTION:
            name = names[sql] = f"fplus_{len(names)}"
            prepares.append(f"PREPARE {name} AS {_numbered(sql)}".encode())
        parts = _parts(sql) if name is None else _execute_parts(name, len(params))
        runs.append(_inline(parts, params, literal))
    return prepares, runs


_transformers: weakref.WeakKeyDictionary[psycopg.Connection, abc.Transformer] = \
    weakref.WeakKeyDictionary()


def _literals(conn: psycopg.Connection) -> Callable[[object], bytes]:
    """How ``conn`` writes a Python value as an SQL literal (psycopg's own adaptation)."""
    transformer = _transformers.get(conn)
    if transformer is None:
        transformer = _transformers[conn] = Transformer.from_context(conn)
    return transformer.as_literal


@functools.lru_cache(maxsize=512)
def _parts(sql: str) -> tuple[bytes, ...]:
    """``sql``'s text around its ``%s`` placeholders (``%%`` is ``%``), as UTF-8 (the
    connections' encoding, checked when they open)."""
    return tuple(part.replace("%%", "%").encode() for part in sql.split("%s"))


@functools.lru_cache(maxsize=PREPARED_PER_CONNECTION * 4)
def _execute_parts(name: str, arity: int) -> tuple[bytes, ...]:
    """``EXECUTE name(%s, …)`` split around its placeholders."""
    return _parts(f"EXECUTE {name}({', '.join(['%s'] * arity)})")


def _inline(parts: tuple[bytes, ...], params: Sequence[object],
            literal: Callable[[object], bytes]) -> bytes:
    """The statement whose text is ``parts`` with ``params`` written between them."""
    if len(parts) != len(params) + 1:
        raise psycopg.ProgrammingError(
            f"the query has {len(parts) - 1} placeholders but {len(params)} parameters")
    out = [parts[0]]
    for value, part in zip(params, parts[1:], strict=True):
        out.append(b"NULL" if value is None else literal(value))
        out.append(part)
    return b"".join(out)


class PgTransactionSql(PgSql):
    """The statements of one transaction on one connection. Mutations nobody reads are held
    and sent with the next statement waited for (a read, or the commit): several statements
    go as one query, one round trip and one driver call for them all (:func:`send`)."""

    def __init__(self, conn: psycopg.Connection) -> None:
        super().__init__(lambda: nullcontext(conn))
        self.conn = conn
        self._held: list[tuple[str, Sequence[object]]] = []

    def execute(self, sql: str, args: Sequence[object] = ()) -> None:
        """Hold a mutation until the next statement that is waited for."""
        self._held.append((pg(sql), args))

    def _run(self, sql: str, args: Sequence[object], fetch: Callable[[psycopg.Cursor], T]) -> T:
        with translated():
            return fetch(self.send([(pg(sql), args)]))

    def many(self, sql: str, args: Iterable[Sequence[object]]) -> None:
        """Run one statement for each argument tuple (after the held ones)."""
        self.send([])
        super().many(sql, args)

    def send(self, statements: list[tuple[str, Sequence[object]]]) -> psycopg.Cursor:
        """Send the held mutations, then ``statements`` (``%s`` placeholders), in one query
        (see :func:`send`); the cursor, on the first result of ``statements``."""
        queue, self._held = [*self._held, *statements], []
        return send(self.conn, queue, len(queue) - len(statements))
