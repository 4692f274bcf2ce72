"""Taking turns to commit to a repo, across processes: an advisory ``flock`` on a file of the
repo's own (``fplus-commit.lock``), held by a writer from reading the branch head until its
compare-and-swap is done.

Only an optimisation: the branch still moves by compare-and-swap alone (:mod:`.refs`), which
is what keeps writers that do not take turns (``git receive-pack``, a writer on a file system
without ``flock``) safe. Without turns, two processes committing at once both build on the
same head and one of them loses the swap, having built, packed and fsynced for nothing; with
them, the second waits, and the callers arriving meanwhile join its next batch.

A turn is never waited for longer than ``timeout`` (the writer then goes ahead untaken: the
swap still decides). The kernel releases the lock of a process that dies holding it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

TURN_FILE = "fplus-commit.lock"


class Turns:
    """``with turns.taken():`` while this process commits to the repo at ``git_dir``.

    Not thread-safe on its own: the group commit has one leader at a time per process.
    """

    def __init__(self, git_dir: Path, timeout: float = 5.0) -> None:
        self.path = Path(git_dir) / TURN_FILE
        self.timeout = timeout
        self._fd = -1
        self._pid = 0
        self.waited = 0
        """Turns this writer had to wait for (another process held the lock)."""

    def _file(self) -> int:
        if self._fd < 0 or self._pid != os.getpid():  # never a descriptor from before a fork
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self._pid = os.getpid()
        return self._fd

    def take(self) -> bool:
        """Wait for the turn (at most ``timeout`` s, polling with short sleeps: run it off a
        gevent hub); whether it was taken. A file that cannot be opened or locked (a
        read-only or lock-less file system) is no turn: the caller goes ahead."""
        try:
            fd = self._file()
        except OSError:
            return False
        deadline = None
        delay = 0.0002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                pass
            except OSError:
                return False
            if deadline is None:
                self.waited += 1
                deadline = time.monotonic() + self.timeout
            elif time.monotonic() > deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.002)

    def give(self) -> None:
        """Hand the turn on."""
        with contextlib.suppress(OSError):
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def taken(self) -> Iterator[bool]:
        """The turn held for the ``with`` block (True), or not had in time (False)."""
        got = self.take()
        try:
            yield got
        finally:
            if got:
                self.give()
