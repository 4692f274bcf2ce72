"""Storage adapters for the Config Store: SQLite (embedded default) and PostgreSQL (several
replicas on one database). The domain sees :class:`Reader`/:class:`Writer` and the rows."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from .dbfile import UnusableDatabase
from .errors import StorageBusy, StorageUnavailable
from .queries import READ_NOTHING, Reader, ReadFirst, SearchCondition
from .rows import AuditRow, Change, GrantRow, LoginRow, ObjectRow, TokenRow
from .sqlite import SQLiteStorage
from .writes import Outcome, Storage, Writer

if TYPE_CHECKING:
    from .postgres.storage import PostgresStorage

DB_FILE = "config-store.db"

__all__ = ["DB_FILE", "READ_NOTHING", "AuditRow", "Change", "GrantRow", "LoginRow", "ObjectRow",
           "Outcome", "ReadFirst", "Reader", "SQLiteStorage", "SearchCondition", "Storage",
           "StorageBusy", "StorageUnavailable", "TokenRow", "UnusableDatabase", "Writer",
           "is_replicated", "open_storage", "parse_database_url"]


def parse_database_url(url: str | None, data_dir: Path) -> tuple[str, str | Path]:
    """``("sqlite", file)`` or ``("postgresql", url)`` for a ``--database`` value (None:
    the SQLite file in ``data_dir``); ValueError with a one-line reason otherwise."""
    if url is None:
        return "sqlite", data_dir / DB_FILE
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        if not path.name:
            raise ValueError(f"--database {url}: name a file, e.g. sqlite:///data/{DB_FILE}")
        return "sqlite", path
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql", url
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise ValueError(f"unsupported --database {scheme[:40]!r} (supported: "
                     "sqlite:///path/to/config-store.db, postgresql://user:pass@host/db)")


def open_storage(url: str | None, data_dir: Path, pool_size: int = 10,
                 durable: bool = False) -> Storage:
    """The storage a ``--database`` value names (see :func:`parse_database_url`), with up to
    ``pool_size`` connections to PostgreSQL.

    Durability is the same on both: by default a commit survives a killed process (the
    service's or the database's) and an OS crash or power loss may lose the last fraction of
    a second of commits, never corrupting (SQLite WAL with ``synchronous=NORMAL``,
    PostgreSQL ``synchronous_commit=off``); ``durable`` waits for the disk at every commit
    (``synchronous=FULL``, ``synchronous_commit=on``).
    Raises :class:`UnusableDatabase` (one line) when it cannot be used."""
    kind, where = parse_database_url(url, data_dir)
    if kind == "sqlite":
        return SQLiteStorage(Path(where), durable)
    from .postgres.storage import PostgresStorage  # psycopg only where PostgreSQL is used

    return PostgresStorage(str(where), pool_size, durable)


def is_replicated(storage: Storage) -> TypeGuard[PostgresStorage]:
    """True for a storage shared by several replicas (PostgreSQL), whose changes the others
    follow (:attr:`Storage.replicated` is the flag; this tells the type checker too)."""
    return storage.replicated
