"""Where a benchmark's Config Store keeps its data: ``--database``.

- ``sqlite`` (the default): each Config Store's own SQLite file, as ``config-store serve``
  does without ``--database``;
- ``postgres``: a throwaway PostgreSQL started here (``harness.postgres``, fsync on, as a
  durable deployment runs it) and a fresh database on it;
- ``postgresql://…``: an existing, empty database, used as it is.

The storage floors (the same merge patch written without HTTP or auth) live here too, one
per kind, so a benchmark compares the Config Store with the storage it actually used.

Profiling aid: with ``FPLUS_BENCH_PG_STATEMENTS=1`` the throwaway PostgreSQL loads
``pg_stat_statements`` and logs every query it receives; as the bench ends, the number of
queries (round trips) and the statements run on the bench's database (calls, rows, server
milliseconds; the most called first) go to stderr. The JSON on stdout is unchanged; the
bookkeeping costs the server CPU, so leave it off for figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import json_merge_patch
import psycopg
from psycopg import sql

from bench._common import StorageFloor, tree_cpu_seconds
from fplus.serving import redacted
from harness.postgres import PostgresServer
from harness.servers import ServiceProcess

SQLITE, POSTGRESQL = "sqlite", "postgresql"
STATEMENTS_ENV = "FPLUS_BENCH_PG_STATEMENTS"
STATEMENTS_SHOWN = 25
"""How many statements the profiling aid prints."""
HELP = ("sqlite (default), postgres (a throwaway durable PostgreSQL started here), or "
        "postgresql://USER:PASSWORD@HOST:PORT/DB (an existing empty database)")


def add_database_arg(parser: argparse.ArgumentParser) -> None:
    """The ``--database`` option every Config Store benchmark takes."""
    parser.add_argument("--database", default=SQLITE, help=HELP)


class Floor(Protocol):
    """One merge patch of one entry per transaction, straight into the storage."""

    def patch(self, app: str, obj: str, doc: dict) -> None: ...

    def close(self) -> None: ...


class PostgresFloor:
    """:class:`bench._common.StorageFloor` in PostgreSQL: read the entry, merge, upsert it
    as canonical JSON text with a JSONB copy and a new etag, commit (one WAL flush). Not
    measured beyond SQLite's floor: the Config Store's advisory write lock, its change log
    row and ``NOTIFY`` for the other replicas."""

    def __init__(self, url: str) -> None:
        self.conn = psycopg.connect(url, autocommit=True)
        self.table = sql.Identifier(f"bench_floor_{secrets.token_hex(4)}")
        self.conn.execute(sql.SQL(
            "CREATE TABLE {} (app TEXT NOT NULL, object TEXT NOT NULL, json TEXT NOT NULL,"
            " doc JSONB, etag TEXT NOT NULL, PRIMARY KEY (app, object))").format(self.table))

    def patch(self, app: str, obj: str, doc: dict) -> None:
        """Merge ``doc`` into the entry of ``obj`` for ``app`` (created from ``{}``)."""
        with self.conn.transaction():
            row = self.conn.execute(sql.SQL("SELECT json FROM {} WHERE app = %s AND object = %s"
                                            " FOR UPDATE").format(self.table),
                                    (app, obj)).fetchone()
            merged = json_merge_patch.merge(json.loads(row[0]) if row else {}, doc)
            text = json.dumps(merged, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            if row is None or row[0] != text:
                self.conn.execute(sql.SQL(
                    "INSERT INTO {} (app, object, json, doc, etag) VALUES (%s, %s, %s,"
                    " %s::jsonb, %s) ON CONFLICT (app, object) DO UPDATE SET json ="
                    " excluded.json, doc = excluded.doc, etag = excluded.etag")
                    .format(self.table), (app, obj, text, text, str(uuid.uuid4())))

    def close(self) -> None:
        self.conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self.table))
        self.conn.close()


class BenchStorage:
    """The storage named by ``--database``; start it, hand its URL to Config Stores, stop."""

    def __init__(self, spec: str) -> None:
        if spec in (SQLITE, "postgres"):
            self.url: str | None = None
        elif spec.startswith(("postgresql://", "postgres://")):
            self.url = spec
        else:
            raise ValueError(f"--database {spec[:40]!r}: expected {HELP}")
        self.kind = SQLITE if spec == SQLITE else POSTGRESQL
        self.server: PostgresServer | None = None
        self.statements = os.environ.get(STATEMENTS_ENV) == "1" and spec == "postgres"
        if spec == "postgres":
            self.server = PostgresServer(fsync=True, settings={
                "shared_preload_libraries": "pg_stat_statements", "log_statement": "all",
                "log_line_prefix": "db=%d "} if self.statements else None)

    def start(self) -> BenchStorage:
        """Start the throwaway server, if any, and make the database the services share."""
        if self.server is not None:
            self.server.start()
            self.url = self.server.create_database()
            if self.statements:
                with psycopg.connect(self.url, autocommit=True) as conn:
                    conn.execute("CREATE EXTENSION pg_stat_statements")
        return self

    def stop(self) -> None:
        if self.server is not None:
            if self.statements and self.url:
                print_statements(self.url)
                self._print_queries()
            self.server.stop()

    @property
    def store_args(self) -> tuple[str, ...]:
        """``config-store serve`` arguments for this storage (none: its own SQLite file)."""
        return ("--database", self.url) if self.url else ()

    @contextlib.contextmanager
    def environ(self) -> Iterator[None]:
        """``FPLUS_DATABASE`` set meanwhile, for a ``config-store serve`` started by code that
        takes no arguments for it (``harness.stack.start_stack``; the Git server and the
        Cluster Manager it starts get no FPLUS_* variable)."""
        if not self.url:
            yield
            return
        before = os.environ.get("FPLUS_DATABASE")
        os.environ["FPLUS_DATABASE"] = self.url
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("FPLUS_DATABASE", None)
            else:
                os.environ["FPLUS_DATABASE"] = before

    def config_stores(self, root: Path, count: int, serve_args: tuple[str, ...] = (),
                      settings: dict[str, str] | None = None) -> list[ServiceProcess]:
        """``count`` Config Stores on this storage (SQLite: each its own file), started one
        after the other (the first migrates a fresh database), with ``serve_args`` and the
        environment ``settings``; every one is stopped if one fails to start."""
        stores: list[ServiceProcess] = []
        try:
            for r in range(count):
                stores.append(ServiceProcess(root / f"cs{r}",
                                             extra_args=(*self.store_args, *serve_args),
                                             settings=dict(settings or {})).start())
        except BaseException:
            for store in stores:
                store.stop()
            raise
        return stores

    def _print_queries(self) -> None:
        """How many queries the bench's database received (its log: one line each)."""
        log = self.server.log_path if self.server else None
        if log is None or not self.url or not log.exists():
            return
        prefix = f"db={self.url.rsplit('/', 1)[1]} "
        with log.open(errors="replace") as lines:
            queries = sum(1 for line in lines if line.startswith(prefix)
                          and ("LOG:  statement: " in line or "LOG:  execute " in line))
        print(f"queries received (round trips): {queries}", file=sys.stderr)

    def server_cpu_seconds(self) -> float | None:
        """CPU seconds the throwaway PostgreSQL has used (None: SQLite, or a server that is
        not ours to measure)."""
        pid = self.server.pid if self.server else None
        return tree_cpu_seconds(pid) if pid else None

    def describe(self) -> dict[str, Any]:
        """What the JSON output says about the storage."""
        out: dict[str, Any] = {"storage": self.kind}
        if self.server is not None:
            out["postgres"] = {"server": "throwaway", "fsync": self.server.fsync}
        elif self.url:
            out["postgres"] = {"server": redacted(self.url)}
        return out

    @contextlib.contextmanager
    def floor(self, scratch: Path) -> Iterator[Floor]:
        """The storage floor: SQLite in ``scratch``, or a scratch table in the database."""
        floor: Floor = (StorageFloor(scratch / "floor.db") if self.kind == SQLITE
                        else PostgresFloor(self.url or ""))
        try:
            yield floor
        finally:
            floor.close()


def print_statements(url: str) -> None:
    """The most called statements on the database at ``url`` (``pg_stat_statements``), to
    stderr: calls, rows, total and mean server milliseconds, the statement's start."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT calls, rows, total_exec_time, mean_exec_time, query "
            "FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database "
            "WHERE datname = current_database()) ORDER BY calls DESC LIMIT %s",
            (STATEMENTS_SHOWN,)).fetchall()
    print(f"{'calls':>9} {'rows':>9} {'total ms':>10} {'mean ms':>8}  statement", file=sys.stderr)
    for calls, nrows, total, mean, query in rows:
        text = " ".join(query.split())[:140]
        print(f"{calls:>9} {nrows:>9} {total:>10.1f} {mean:>8.3f}  {text}", file=sys.stderr)


@contextlib.contextmanager
def bench_storage(parser: argparse.ArgumentParser, spec: str) -> Iterator[BenchStorage]:
    """The started storage for ``--database spec`` (a bad value: the parser's error)."""
    try:
        storage = BenchStorage(spec)
    except ValueError as exc:
        parser.error(str(exc))
    storage.start()
    try:
        yield storage
    finally:
        storage.stop()
