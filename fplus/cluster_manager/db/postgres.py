"""The database in PostgreSQL, shared by every replica (psycopg 3 and a connection pool).

The pool belongs to the process that first uses it: one opened before a fork (gunicorn's
master) is never used after it; the worker opens its own. A connection is checked as it
leaves the pool, so a database that went away and came back is used again without a
restart; while it is away, statements raise :class:`DatabaseUnavailable` within
``timeout`` seconds.
"""

from __future__ import annotations

import os
import threading
import zlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from fplus.serving.db.dburl import redacted

from .base import Database, DatabaseError, DatabaseUnavailable, Params

SCHEMA_LOCK = zlib.crc32(b"fplus cluster-manager schema")
"""The advisory lock key under which replicas create the schema (one at a time)."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@lru_cache(maxsize=256)
def _placeholders(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s`` (our statements contain no other ``?`` or
    ``%``)."""
    return sql.replace("?", "%s")


class PostgresDatabase(Database):
    """A PostgreSQL database (see the module docstring)."""

    dialect = "postgresql"
    now = "extract(epoch from statement_timestamp())::double precision"

    def __init__(self, url: str, *, pool_size: int = 4, timeout: float = 3.0) -> None:
        self.url = url
        self.description = redacted(url)
        self.pool_size = pool_size
        self.timeout = timeout
        self._lock = threading.Lock()
        self._pool: ConnectionPool | None = None
        self._pid = 0

    def _connect_args(self) -> dict[str, Any]:
        return {"autocommit": True, "connect_timeout": max(1, round(self.timeout))}

    def prepare(self, schema: Sequence[str]) -> None:
        try:
            with psycopg.connect(self.url, **self._connect_args()) as conn, \
                    conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                for statement in schema:
                    conn.execute(statement)
        except psycopg.OperationalError as exc:
            raise DatabaseError(f"cannot use the database {self.description}: "
                                f"{_first_line(exc)}") from None
        except psycopg.Error as exc:
            raise DatabaseError(f"the database {self.description} refused the Cluster "
                                f"Manager's tables: {_first_line(exc)}") from None

    def _pooled(self) -> ConnectionPool:
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                self._pool = ConnectionPool(
                    self.url, min_size=1, max_size=self.pool_size, open=False,
                    timeout=self.timeout, kwargs=self._connect_args(),
                    check=ConnectionPool.check_connection, reconnect_timeout=0,
                    name="cluster-manager")
                self._pool.open(wait=False)
                self._pid = os.getpid()
            return self._pool

    def _run(self, sql: str, params: Params, fetch: bool | str) -> Any:
        try:
            with self._pooled().connection() as conn:
                cur = conn.execute(_placeholders(self.sql(sql)), tuple(params))
                if fetch == "all":
                    return cur.fetchall()
                return cur.fetchone() if fetch else cur.rowcount
        except PoolTimeout as exc:
            raise DatabaseUnavailable(f"the database {self.description} cannot be reached "
                                      f"(no connection within {self.timeout:.0f} s)") from exc
        except psycopg.Error as exc:
            raise DatabaseUnavailable(f"the database {self.description} failed: "
                                      f"{_first_line(exc)}") from exc

    def execute(self, sql: str, params: Params = ()) -> int:
        return self._run(sql, params, fetch=False)

    def fetchone(self, sql: str, params: Params = ()) -> tuple[Any, ...] | None:
        return self._run(sql, params, fetch=True)

    def fetchall(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        return self._run(sql, params, fetch="all")

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid():
            pool.close(timeout=1)
