"""Making a file system's recent writes durable in one call: ``syncfs(2)`` (Linux).

Files written without an fsync each (their data, their metadata and the directory entries
naming them) are on disk once a :func:`sync_file_system` of the file system holding them
returns. Where the C library has no ``syncfs`` (:data:`AVAILABLE` is False) writers fsync
each file instead.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable


def _syncfs() -> Callable[[int], int] | None:
    try:
        found = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    found.argtypes, found.restype = [ctypes.c_int], ctypes.c_int
    call: Callable[[int], int] = found
    return call


_SYNCFS = _syncfs()
AVAILABLE = _SYNCFS is not None
"""Whether :func:`sync_file_system` works here."""


def sync_file_system(fd: int) -> None:
    """Write out and wait for everything written to the file system holding the open file
    ``fd``; an ``OSError`` for a write-back error (Linux ≥ 5.8 reports those written since
    ``fd`` was opened or last synced) or where :data:`AVAILABLE` is False. The GIL is
    released meanwhile."""
    if _SYNCFS is None:
        raise OSError("syncfs(2) is not available on this system")
    if _SYNCFS(fd) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
