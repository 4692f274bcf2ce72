"""The Cluster Manager's database tables, listed once.

Each table is defined by the module that uses it (its ``CREATE TABLE`` and any index, as
that module's ``SCHEMA``, or ``schema(dialect)`` where the dialects differ); this list of
owners is the one place a new table is added. Start-up prepares every table from it
(:func:`statements`) and the backup reads the columns of the tables it takes from it
(:func:`schemas`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from . import audit, escrow, keypin, leader
from .services.bootstrap import tokens
from .tunnel import table as tunnel_table

Statements = tuple[str, ...]

_OWNERS: tuple[Statements | Callable[[str], Statements], ...] = (
    tokens.SCHEMA,  # cm_bootstrap_tokens
    leader.SCHEMA,  # cm_leader_lease
    escrow.SCHEMA,  # cm_sealed_keys
    keypin.SCHEMA,  # cm_sealing_keys
    audit.schema,  # cm_audit
    tunnel_table.SCHEMA,  # cm_tunnels
)
_TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS (\w+)")


def schemas(dialect: str) -> dict[str, Statements]:
    """Each table's statements for a ``dialect`` database, by table name, in the order they
    are prepared."""
    found: dict[str, Statements] = {}
    for owner in _OWNERS:
        made = owner(dialect) if callable(owner) else owner
        table = _TABLE.search("".join(made))
        if table is None:
            raise ValueError(f"no CREATE TABLE in {made!r}")
        found[table.group(1)] = made
    return found


def statements(dialect: str) -> Statements:
    """Every table (and index) for :meth:`~fplus.cluster_manager.db.Database.prepare`."""
    return tuple(s for made in schemas(dialect).values() for s in made)
