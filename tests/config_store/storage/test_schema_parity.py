"""The Config Store's tables are defined twice, once per dialect: SQLite's ``schema.sql`` and
PostgreSQL's numbered migrations. This holds them to one shape, column by column (name,
order, type family, NOT NULL, default, primary key), so a column added on one side and not the
other fails here rather than on a replica. The differences that are meant are listed, each
with its reason."""

from __future__ import annotations

import re
import sqlite3
from importlib import resources
from typing import NamedTuple

STORAGE = "fplus.config_store._storage"
POSTGRES_ONLY_TABLES = {
    "change_log": "what each write changed, for the other replicas to follow",
    "change_log_pruned": "how far change_log was pruned",
    "schema_migration": "which migrations ran (made by migrations.py)",
}
POSTGRES_ONLY_COLUMNS = {
    ("config", "doc"): "a JSONB copy of the entry that searches are evaluated on",
}
# Type families: SQLite's affinity names and what PostgreSQL uses for the same values.
FAMILIES = {"TEXT": "text", "INTEGER": "integer", "BIGINT": "integer", "BIGSERIAL": "integer",
            "REAL": "real", "DOUBLE PRECISION": "real", "JSONB": "json",
            "TIMESTAMPTZ": "time"}


class Column(NamedTuple):
    name: str
    family: str
    not_null: bool
    default: str | None
    primary_key: bool


def _sqlite_tables() -> dict[str, list[Column]]:
    """The tables a fresh SQLite store has, as SQLite itself reports them."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(resources.files(STORAGE).joinpath("schema.sql").read_text())
    names = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    return {name: [Column(c[1], FAMILIES[c[2].upper()], bool(c[3]) or bool(c[5]),
                          c[4], bool(c[5]))
                   for c in conn.execute(f"PRAGMA table_info({name})")] for name in names}


def _postgres_tables() -> dict[str, list[Column]]:
    """The tables PostgreSQL's migrations create, read from their statements in order."""
    sql_dir = resources.files(STORAGE).joinpath("postgres", "sql")
    scripts = sorted((f for f in sql_dir.iterdir() if f.name.endswith(".sql")),
                     key=lambda f: f.name)
    text = "\n".join(re.sub(r"--[^\n]*", "", f.read_text()) for f in scripts)
    tables: dict[str, list[Column]] = {}
    for name, body in re.findall(r"CREATE TABLE (\w+) \((.*?)\n\);", text, flags=re.S):
        columns, keys = [], set()
        for line in (part.strip() for part in re.split(r",\n", body.strip())):
            key = re.fullmatch(r"PRIMARY KEY \(([^)]*)\)", line)
            if key:
                keys |= {k.strip() for k in key[1].split(",")}
                continue
            if line.startswith(("UNIQUE", "CHECK")):
                continue
            match = re.fullmatch(r"(\w+)\s+(DOUBLE PRECISION|\w+)(.*)", line)
            assert match, f"{name}: cannot read {line!r}"
            column, kind, rest = match.groups()
            default = re.search(r"DEFAULT (\S+)", rest)
            columns.append([column, FAMILIES[kind], "NOT NULL" in rest or "PRIMARY KEY" in rest,
                            default[1] if default else None, "PRIMARY KEY" in rest])
        tables[name] = [Column(c[0], c[1], c[2] or c[0] in keys, c[3], c[4] or c[0] in keys)
                        for c in columns]
    return tables


def test_every_table_has_the_same_columns_in_both_dialects() -> None:
    sqlite, postgres = _sqlite_tables(), _postgres_tables()
    assert set(postgres) - set(sqlite) == set(POSTGRES_ONLY_TABLES) - {"schema_migration"}
    assert set(sqlite) - set(postgres) == set()
    for table, columns in sqlite.items():
        theirs = [c for c in postgres[table] if (table, c.name) not in POSTGRES_ONLY_COLUMNS]
        assert columns == theirs, f"table {table} differs between schema.sql and postgres/sql"


def test_the_listed_differences_are_still_there() -> None:
    """A difference listed above that no longer exists is a list that lies."""
    postgres = _postgres_tables()
    for table, column in POSTGRES_ONLY_COLUMNS:
        assert column in [c.name for c in postgres[table]]
    assert {"change_log", "change_log_pruned"} <= set(postgres)
