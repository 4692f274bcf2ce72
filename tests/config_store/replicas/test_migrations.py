"""Schema migrations on a shared database: replicas starting at once on an empty database
all come up, migrate once and make one root principal; a database migrated by a newer
version is refused in one line."""

from __future__ import annotations

from pathlib import Path

import psycopg

from fplus.config_store._storage import migrations
from harness.postgres import ExternalPostgres, PostgresServer

from .pair import Replicas, refusal, replica, start_all


def check_one_schema_and_one_root(pair: Replicas) -> None:
    with psycopg.connect(pair.database) as conn:
        versions = conn.execute("SELECT version, count(*) FROM schema_migration "
                                "GROUP BY version ORDER BY version").fetchall()
        roots = conn.execute("SELECT count(*) FROM principal WHERE name = 'admin'").fetchone()
    assert versions == [(v, 1) for v, _, _ in migrations.known()]
    assert roots == (1,)
    listings = [pair.admin(i).get("/v2/object") for i in range(len(pair.procs))]
    assert all(r.status_code == 200 for r in listings), [r.text for r in listings]
    assert len({tuple(sorted(r.json())) for r in listings}) == 1


def test_replicas_started_at_once_migrate_once_and_make_one_root(
        postgres: PostgresServer | ExternalPostgres, tmp_path: Path) -> None:
    """Twice: on an empty database, then on one whose root principal is missing (a first
    start cut short), so that every replica looks for it at the same time."""
    database = postgres.create_database()
    for attempt in range(2):
        procs = [replica(tmp_path / f"{attempt}-{i}", database) for i in range(2)]
        pair = Replicas(database, tmp_path, start_all(procs))
        try:
            check_one_schema_and_one_root(pair)
        finally:
            pair.stop()
        with psycopg.connect(database) as conn:
            conn.execute("DELETE FROM principal WHERE name = 'admin'")


def test_a_database_migrated_by_a_newer_version_is_refused_in_one_line(
        postgres: PostgresServer | ExternalPostgres, tmp_path: Path) -> None:
    database = postgres.create_database()
    with psycopg.connect(database, autocommit=True) as conn:
        migrations.migrate(conn)
        conn.execute("INSERT INTO schema_migration (version, name) VALUES (9999, 'future')")
    line = refusal(tmp_path, database)
    assert "9999" in line, line
