"""One file-system sync shared by every writer waiting for one (group sync).

Writers of several repos at once (a batch of clusters being commissioned) each write their
pack and their ref's new value without an fsync, then call :meth:`SharedSync.flush`: it
returns once a sync of the file system that began after the call has ended, so everything
the caller wrote before it is on disk. Whoever calls while a sync runs waits for the next
one, which one of them runs for all: N writers at once cost two syncs, not 3N fsyncs.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from fplus.git.bare import durable
from fplus.git.repo._registry import ProcessRegistry
from fplus.serving.background import offload


class SharedSync:
    """Group sync of the file system an open descriptor is on (thread- and greenlet-safe)."""

    def __init__(self, fd: int, sync: Callable[[int], None] = durable.sync_file_system) -> None:
        self._fd, self._sync = fd, sync
        self._cond = threading.Condition()
        self._started = 0  # syncs begun
        self._finished = 0  # the last sync that succeeded
        self._running = False
        self._waiting = 0

    @property
    def syncs(self) -> int:
        """Syncs begun so far."""
        return self._started

    @property
    def waiting(self) -> int:
        """Callers waiting for a sync another runs."""
        return self._waiting

    def flush(self) -> None:
        """Return once a sync begun after this call has succeeded (``OSError`` if the one
        this caller ran failed; a sync another ran that failed is run again)."""
        with self._cond:
            wanted = self._started + 1
        time.sleep(0)  # writers already running join this sync rather than the next
        while True:
            with self._cond:
                while self._running and self._finished < wanted:
                    self._waiting += 1
                    self._cond.wait()
                    self._waiting -= 1
                if self._finished >= wanted:
                    return
                self._running = True
                self._started += 1
                mine = self._started
            ok = False
            try:  # the syscall waits for the disk: off the gevent hub
                offload.run(self._sync, self._fd)
                ok = True
            finally:
                with self._cond:
                    self._running = False
                    if ok:
                        self._finished = mine
                    self._cond.notify_all()


_shared: ProcessRegistry[int, SharedSync] = ProcessRegistry()


def shared_sync(path: Path) -> SharedSync | None:
    """The process's :class:`SharedSync` for the file system holding the directory ``path``
    (None where syncs of a file system are not available: writers fsync each file)."""
    if not durable.AVAILABLE:
        return None
    device = os.stat(path).st_dev
    return _shared.get(device, lambda: SharedSync(os.open(path, os.O_RDONLY)))
