"""``--database`` URLs: which backend, and how to name one without its password."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from .base import Database, DatabaseError

SQLITE_PREFIX = "sqlite:///"
POSTGRES_SCHEMES = ("postgresql", "postgres")


def redacted(url: str) -> str:
    """``url`` with any password (in its user part or a ``password`` parameter) replaced by
    ``***``."""
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:
        return url.split("@", 1)[-1] if "@" in url else url
    if password is not None:
        user, host = parts.netloc.rsplit("@", 1)
        parts = parts._replace(netloc=f"{user.split(':', 1)[0]}:***@{host}")
    if parts.query:
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        parts = parts._replace(query="&".join(
            f"{k}=***" if k == "password" else urllib.parse.urlencode({k: v})
            for k, v in query))
    return urllib.parse.urlunsplit(parts)


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
