"""The database file itself: private to the service, never silently replaced.

The file and its ``-wal``/``-shm`` companions are readable by their owner only
(:data:`FILE_MODE`: a new database is made so, an existing one tightened when looser; SQLite
gives the companions the database's mode). A new database is made aside and linked into
place, so a crash while making it never leaves an empty file under the real name. An empty
file (which SQLite would take for a new database, silently starting an empty store) or one
SQLite cannot read as an intact database is refused with :class:`UnusableDatabase`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

FILE_MODE = 0o600
"""Mode of the database file and its ``-wal``/``-shm`` files (tightened if looser)."""


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
            _create(path, initialise)
        if not path.is_file():
            raise refusal(path, "is not a regular file")
        if path.stat().st_size == 0:
            raise refusal(path, "is empty (0 bytes), not a database")
        _tighten(path)
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


def _create(path: Path, initialise: Callable[[sqlite3.Connection], None]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE))
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            initialise(conn)
        finally:
            conn.close()  # the last connection folds the -wal back in and removes it
        try:
            os.link(tmp, path)
        except FileExistsError:  # made meanwhile by another process: keep that one
            pass
        except OSError:  # a file system without hard links
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _tighten(path: Path) -> None:
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            mode = stat.S_IMODE(file.stat().st_mode)
            if mode & ~FILE_MODE:
                file.chmod(mode & FILE_MODE)
