"""Waits that block the process first, then cooperate (``config_store._storage.pgwait``),
against a real PostgreSQL: answers within the budget never reach the cooperative wait, slow
ones finish there with the right result, a dead connection fails cleanly, and under gevent
a write waiting on another replica's lock lets the process serve others."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator

import psycopg
import pytest

from config_store._storage import pgwait
from config_store._storage.pgwait import PooledConnection

pytestmark = pytest.mark.replicas


@pytest.fixture
def conn(postgres_url: str) -> Iterator[PooledConnection]:
    connection = PooledConnection.connect(postgres_url, autocommit=True)
    yield connection
    connection.close()


def _counting(conn: PooledConnection, budget_s: float) -> list[int]:
    """Give ``conn`` a blocking budget, and count how often it falls back to cooperating."""
    fallbacks: list[int] = []
    cooperative = psycopg.Connection.wait

    def wait(gen, interval=0.1, timeout=None):  # type: ignore[no-untyped-def]
        return pgwait.wait_blocking_first(
            gen, conn.pgconn.socket, budget_s,
            lambda rest: fallbacks.append(1) or cooperative(conn, rest, interval))

    conn.wait = wait  # type: ignore[method-assign]
    return fallbacks


@pytest.mark.parametrize(("budget_s", "query", "expected", "fell_back"), [
    (5.0, "SELECT 41 + 1", 42, False),
    (5.0, "SELECT count(*) FROM generate_series(1, 1000)", 1000, False),
    (0.01, "SELECT 42 FROM pg_sleep(0.2)", 42, True),
    (0.0, "SELECT 42", 42, True),
])
def test_the_answer_is_the_same_blocking_or_not(conn: PooledConnection, budget_s: float,
                                                query: str, expected: int,
                                                fell_back: bool) -> None:
    fallbacks = _counting(conn, budget_s)
    row = conn.execute(query).fetchone()
    assert row == (expected,)
    assert bool(fallbacks) is fell_back


def test_several_results_and_a_transaction_go_through(conn: PooledConnection) -> None:
    conn.block_s = 1.0
    conn.execute("CREATE TABLE t (n int)")
    with conn.transaction():
        conn.execute("INSERT INTO t SELECT generate_series(1, 500)")
    cur = psycopg.ClientCursor(conn)
    cur.execute("SELECT count(*) FROM t; SELECT max(n) FROM t")
    assert cur.fetchone() == (500,)
    assert cur.nextset() and cur.fetchone() == (500,)


def test_a_connection_killed_by_the_server_fails_the_wait(conn: PooledConnection,
                                                         postgres_url: str) -> None:
    conn.block_s = 1.0
    pid = conn.info.backend_pid
    with psycopg.connect(postgres_url, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(psycopg.OperationalError):
        conn.execute("SELECT 1")
    assert conn.closed


def test_under_gevent_a_write_waiting_for_the_lock_lets_others_run(postgres_url: str) -> None:
    """Another session holds the write lock for 0.3 s; meanwhile a greenlet of the writer's
    process keeps ticking (blocking for good would stop it, and the greenlet that releases
    the lock with it: the write would never end)."""
    script = textwrap.dedent("""
        from gevent import monkey; monkey.patch_all()
        import sys, time, gevent, psycopg
        from config_store._storage.postgres import PostgresStorage, WRITE_LOCK
        url = sys.argv[1]
        store = PostgresStorage(url)
        holder = psycopg.connect(url)
        holder.execute(f"SELECT pg_advisory_xact_lock({WRITE_LOCK})")
        ticks = []
        def tick():
            while True:
                ticks.append(time.monotonic())
                gevent.sleep(0.01)
        def release():
            gevent.sleep(0.3)
            holder.commit()
        gevent.spawn(tick)
        gevent.spawn(release)
        start = time.monotonic()
        with store.write():
            pass
        print(len([t for t in ticks if t > start]), round(time.monotonic() - start, 2))
    """)
    done = subprocess.run([sys.executable, "-c", script, postgres_url], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    ticks, waited = done.stdout.split()
    assert float(waited) >= 0.3
    assert int(ticks) >= 10
