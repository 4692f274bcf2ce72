"""The Cluster Manager's tables a restore needs, as JSON rows.

Taken: ``cm_sealing_keys`` (each cluster's pinned sealing key, so seals keep going to the
edge's controller), ``cm_sealed_keys`` (the seal records, with the escrowed values
encrypted under the escrow key, so a re-seal works) and ``cm_audit`` (the audit log, names
only; restored in its order and with its times, numbered after any rows the target holds,
and optional in a backup taken before it was). Not taken: ``cm_bootstrap_tokens``
(a bootstrap URL issued before the backup never works after a restore) and
``cm_leader_lease``. A restored pin is not armed (no bootstrap script was fetched from the
restored stack).
"""

from __future__ import annotations

import re
from operator import itemgetter
from typing import TypeAlias, cast

from ..db import Database
from ..schema import schemas
from .directory import BackupError

Rows: TypeAlias = "dict[str, list[dict[str, object]]]"
"""Each table taken -> its rows, column -> value."""

TAKEN = ("cm_sealing_keys", "cm_sealed_keys", "cm_audit")
_SQLITE = schemas("sqlite")
SCHEMAS = {table: _SQLITE[table] for table in TAKEN}
"""The statements of the tables taken (SQLite's, whose column types :func:`columns` reads)."""
CLEARED = {"cm_sealing_keys": ("armed_at",)}
"""Columns a restore leaves empty."""
RENUMBERED = {"cm_audit": "seq"}
"""The column a restore leaves to the target to number (rows are loaded in its order)."""
APPENDED = ("cm_audit",)
"""Tables a restore adds to (the others must be empty), and a backup may lack."""
_COLUMN = re.compile(r"^\s+([a-z_]+)\s+(?:TEXT|INTEGER|DOUBLE PRECISION)", re.MULTILINE)


def columns(table: str) -> list[str]:
    """The columns of ``table``, read from its ``CREATE TABLE`` statement."""
    return _COLUMN.findall("".join(SCHEMAS[table]))


def prepare(db: Database) -> None:
    """Make the tables if missing (a database the Cluster Manager never started on)."""
    made = schemas(db.dialect)
    db.prepare([statement for table in TAKEN for statement in made[table]])


def dump(db: Database) -> Rows:
    """Every row of the tables taken."""
    prepare(db)
    out = {}
    for table in SCHEMAS:
        names = columns(table)
        rows = db.fetchall(f"SELECT {', '.join(names)} FROM {table} ORDER BY 1")  # noqa: S608
        out[table] = [dict(zip(names, row, strict=True)) for row in rows]
    return out


def counts(db: Database) -> dict[str, int]:
    """Rows per table a restore target must have none of (not :data:`APPENDED`)."""
    prepare(db)
    found = {}
    for table in (t for t in SCHEMAS if t not in APPENDED):
        row = db.fetchone(f"SELECT COUNT(*) FROM {table}")  # noqa: S608
        found[table] = int(row[0]) if row else 0
    return found


def check(data: object) -> Rows:
    """The tables of a backup, every row naming exactly its table's columns."""
    if not isinstance(data, dict) or not set(SCHEMAS) - set(APPENDED) <= set(data) <= set(
            SCHEMAS):
        raise BackupError(f"tables.json must hold exactly {sorted(SCHEMAS)}")
    for table, rows in data.items():
        names = set(columns(table))
        if not isinstance(rows, list) or any(not isinstance(r, dict) or set(r) != names
                                             for r in rows):
            raise BackupError(f"tables.json: {table} rows must name its columns "
                              f"{sorted(names)}")
    return cast(Rows, data)  # every table a list of rows, each naming its columns


def load(db: Database, data: Rows) -> None:
    """Insert the rows of :func:`check`ed tables."""
    for table, rows in data.items():
        numbered = RENUMBERED.get(table)
        names = [n for n in columns(table) if n != numbered]
        if numbered is not None:
            rows = sorted(rows, key=itemgetter(numbered))
        sql = (f"INSERT INTO {table} ({', '.join(names)}) "  # noqa: S608
               f"VALUES ({', '.join('?' * len(names))})")
        for row in rows:
            db.execute(sql, [None if n in CLEARED.get(table, ()) else row[n] for n in names])
