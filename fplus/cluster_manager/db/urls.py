"""``--database`` URLs: which backend (:func:`serving.redacted` names one without its
password)."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from fplus.serving.db.dburl import redacted

from .base import Database, DatabaseError

SQLITE_PREFIX = "sqlite:///"
POSTGRES_SCHEMES = ("postgresql", "postgres")


def open_database(url: str) -> Database:
    """The database named by ``url`` (``sqlite:///FILE`` or ``postgresql://…``), not yet
    connected; :class:`DatabaseError` for any other URL."""
    if url.startswith(SQLITE_PREFIX):
        from .sqlite import SqliteDatabase

        path = url.removeprefix(SQLITE_PREFIX)
        if not path:
            raise DatabaseError(f"--database {url}: no file named (sqlite:///PATH)")
        return SqliteDatabase(Path(path))
    if urllib.parse.urlsplit(url).scheme in POSTGRES_SCHEMES:
        from .postgres import PostgresDatabase

        return PostgresDatabase(url)
    raise DatabaseError(f"--database {redacted(url)}: not a sqlite:///FILE or "
                        "postgresql://… URL")
