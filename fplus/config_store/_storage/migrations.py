"""Forward-only, versioned schema migrations for PostgreSQL.

Each ``pg/NNNN_name.sql`` runs once, in order, in its own transaction, recorded in
``schema_migration``. Replicas starting at once take a session advisory lock first, so
exactly one applies what is missing and the others find it done. A database migrated by a
newer version than this one knows is refused rather than used.
"""

from __future__ import annotations

import re
from importlib import resources

import psycopg

MIGRATION_LOCK = 0x66706C7573_01
"""``pg_advisory_lock`` key held while migrating (``fplus`` + 1)."""

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


class NewerSchema(RuntimeError):
    """The database was migrated by a newer version of the Config Store."""


def known() -> list[tuple[int, str, str]]:
    """``(version, file name, SQL)`` of every migration this version ships, in order."""
    folder = resources.files(__package__).joinpath("pg")
    found = []
    for item in folder.iterdir():
        match = _NAME.match(item.name)
        if match:
            found.append((int(match[1]), item.name, item.read_text()))
    return sorted(found)


def migrate(conn: psycopg.Connection) -> list[str]:
    """Apply the missing migrations on ``conn`` (autocommit); the names of those applied."""
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS schema_migration (version INTEGER PRIMARY KEY, "
                     "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migration").fetchone()
        current = row[0] if row else 0
        migrations = known()
        newest = migrations[-1][0] if migrations else 0
        if current > newest:
            raise NewerSchema(f"was migrated to schema version {current} by a newer version "
                              f"(this one knows up to {newest})")
        applied = []
        for version, name, sql in migrations:
            if version <= current:
                continue
            with conn.transaction():
                conn.execute(sql)
                conn.execute("INSERT INTO schema_migration (version, name) VALUES (%s, %s)",
                             (version, name))
            applied.append(name)
        return applied
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
