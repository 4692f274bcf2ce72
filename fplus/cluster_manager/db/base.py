"""What both backends offer: single statements in autocommit, and an idempotent schema."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

Params = Sequence[Any]


class DatabaseError(RuntimeError):
    """The database cannot be used at start; the message is one line naming it."""


class DatabaseUnavailable(RuntimeError):
    """The database cannot answer now (unreachable, locked, failing): try again later."""


class Database(ABC):
    """One database, used by several threads (greenlets) at once."""

    dialect: str
    """``sqlite`` or ``postgresql``."""
    now: str
    """SQL for the database's clock, in seconds since the epoch (a float)."""
    description: str
    """How to name the database in messages (never with a password)."""

    @abstractmethod
    def prepare(self, schema: Sequence[str]) -> None:
        """Check the database answers and run ``schema`` (idempotent ``CREATE … IF NOT
        EXISTS`` statements; two replicas starting at once create it once).

        Raises :class:`DatabaseError` with one line when the database is unusable.
        """

    @abstractmethod
    def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement (committed at once); return the number of rows it changed."""

    @abstractmethod
    def fetchone(self, sql: str, params: Params = ()) -> tuple[Any, ...] | None:
        """The first row of a query, or None."""

    @abstractmethod
    def fetchall(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        """Every row of a query."""

    @abstractmethod
    def close(self) -> None:
        """Close this process's connections (they are opened again on use)."""

    def sql(self, text: str) -> str:
        """``text`` with ``{now}`` replaced by this database's clock."""
        return _with_clock(text, self.now)


@lru_cache(maxsize=256)
def _with_clock(text: str, now: str) -> str:
    return text.replace("{now}", f"({now})")
