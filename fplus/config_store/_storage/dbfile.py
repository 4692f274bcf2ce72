"""The database file itself: private to the service (:mod:`fplus.serving.db.privatedb`: 0600, made
aside), never silently replaced. An empty file (which SQLite would take for a new database,
silently starting an empty store) or one SQLite cannot read as an intact database is refused
with :class:`UnusableDatabase`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from fplus.serving.db.privatedb import FILE_MODE, create_aside, tighten

__all__ = ["FILE_MODE", "UnusableDatabase", "check", "prepare", "refusal", "sqlite_reason"]


class UnusableDatabase(Exception):
    """The database file cannot be opened as a Config Store; the message is one line naming
    the file (for the command to print instead of a traceback)."""


def refusal(path: Path, why: str) -> UnusableDatabase:
    """The one-line refusal for ``path``, saying ``why`` and what to do."""
    return UnusableDatabase(f"the Config Store database {path} {why}: restore it from a "
                            "backup, or move it away to start an empty store")


def sqlite_reason(exc: sqlite3.Error) -> str:
    """An SQLite error as a few words on one line."""
    return " ".join(str(exc).split()) or type(exc).__name__


def prepare(path: Path, initialise: Callable[[sqlite3.Connection], None]) -> None:
    """Make ``path`` ready to open: create it (aside, 0600, ``initialise`` run on it) when
    missing, refuse it when empty, tighten its and its companions' modes."""
    try:
        if not path.exists():
            create_aside(path, initialise)
        if not path.is_file():
            raise refusal(path, "is not a regular file")
        if path.stat().st_size == 0:
            raise refusal(path, "is empty (0 bytes), not a database")
        tighten(path)
    except OSError as exc:
        raise refusal(path, f"cannot be opened ({exc.strerror or exc})") from None
    except sqlite3.Error as exc:
        raise refusal(path, f"cannot be made ({sqlite_reason(exc)})") from None


def check(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a database failing SQLite's quick check (about 0.1 s per 100 MB)."""
    found = conn.execute("PRAGMA quick_check(1)").fetchone()
    if found is None or found[0] != "ok":
        said = " ".join(str(found[0]).split()) if found else "no answer"
        raise refusal(path, f"is corrupt (quick check: {said})")
