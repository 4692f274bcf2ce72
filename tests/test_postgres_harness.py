"""The PostgreSQL fixture: fresh independent databases, a non-root server, a clean stop."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest

from harness.postgres import ExternalPostgres, PostgresServer, children, find_bin_dir


def test_databases_are_independent(postgres_url: str, postgres) -> None:
    other = postgres.create_database()
    assert other != postgres_url
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (v text)")
        conn.execute("INSERT INTO t VALUES ('one')")
    with psycopg.connect(other, autocommit=True) as conn:
        exists = conn.execute("SELECT to_regclass('t')").fetchone()
    assert exists == (None,)


def test_server_runs_as_a_non_root_user(postgres) -> None:
    if isinstance(postgres, ExternalPostgres):
        pytest.skip("an external server's user is not ours to choose")
    assert postgres.pid is not None
    assert os.stat(f"/proc/{postgres.pid}").st_uid != 0
    with psycopg.connect(postgres.admin_url) as conn:
        assert conn.execute("SHOW fsync").fetchone() == ("off",)


@pytest.mark.replicas  # a PostgreSQL of its own: with the other PostgreSQL tests
def test_stop_leaves_no_process_and_no_directory() -> None:
    if find_bin_dir() is None:
        pytest.skip("no PostgreSQL binaries")
    server = PostgresServer(fsync=False, max_connections=20).start()
    url = server.create_database("named_db")
    assert url.endswith("/named_db")
    held = psycopg.connect(url)  # a backend the stop has to end too
    pid, root = server.pid, server.root
    assert pid is not None and root is not None
    started = [pid, *children(pid)]
    assert len(started) > 2  # the postmaster, its helpers and our backend
    server.stop()
    held.close()
    assert [p for p in started if Path(f"/proc/{p}").exists()] == []
    assert not root.exists()
    assert server.pid is None
