"""SQLite files private to the service that owns them.

The file and its ``-wal``/``-shm`` companions are readable by their owner only
(:data:`FILE_MODE`: a new database is made so, an existing one tightened when looser; SQLite
gives the companions the database's mode). A new database is made aside and linked into
place, so a crash while making it never leaves an empty file under the real name (an empty
file is what SQLite would silently take for a new, empty database).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

FILE_MODE = 0o600
"""Mode of a private database and its ``-wal``/``-shm`` files."""


def create_aside(path: Path, initialise: Callable[[sqlite3.Connection], None]) -> None:
    """Make the database ``path`` (mode 0600) with ``initialise`` run on it, under a temporary
    name first; if another process made ``path`` meanwhile, keep theirs."""
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


def tighten(path: Path) -> None:
    """Drop any permission beyond :data:`FILE_MODE` from the database and its companions."""
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            mode = stat.S_IMODE(file.stat().st_mode)
            if mode & ~FILE_MODE:
                file.chmod(mode & FILE_MODE)
