"""Compare-and-swap of a loose ref using git's own lock-file protocol.

``git receive-pack`` (and libgit2) update ``refs/heads/x`` by creating ``refs/heads/x.lock``
exclusively, checking the old value, writing the new one and renaming the lock over the ref.
Doing exactly the same here means neither side can clobber the other. :func:`lock_ref` is
the first half of it, for a writer that makes the new value durable together with other
writes before the rename.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from pathlib import Path


class RefLockTimeout(TimeoutError):
    """The ref stayed locked by a live writer for longer than the timeout."""


def read_ref(git_dir: Path, ref: str) -> str | None:
    """Current sha of ``ref`` (loose file first, then ``packed-refs``), or None if absent."""
    try:
        value = (git_dir / ref).read_text().strip()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        value = ""
    if value:
        if value.startswith("ref:"):
            raise ValueError(f"{ref} is a symbolic ref")
        return value
    try:
        packed = (git_dir / "packed-refs").read_text()
    except FileNotFoundError:
        return None
    for line in packed.splitlines():
        if line[:1] in ("#", "^", ""):
            continue
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha
    return None


def compare_and_swap(git_dir: Path, ref: str, new: str, old: str | None, *,
                     stale_after: float = 10.0, timeout: float = 30.0) -> bool:
    """Point ``ref`` at ``new`` iff it is still ``old`` (None: absent). False on a mismatch."""
    update = lock_ref(git_dir, ref, new, old, stale_after=stale_after, timeout=timeout)
    if update is None:
        return False
    update.commit()
    fsync_dir(update.ref_path.parent)  # the rename itself, before anyone is told
    return True


class RefUpdate:
    """A ref locked with its new value written to the lock file (:func:`lock_ref`):
    :meth:`commit` moves the ref, :meth:`abort` lets it be."""

    def __init__(self, lock: Path, ref_path: Path) -> None:
        self.lock, self.ref_path = lock, ref_path

    def commit(self) -> None:
        """Rename the lock over the ref (the lock is gone either way)."""
        try:
            os.replace(self.lock, self.ref_path)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Remove the lock; the ref keeps its value."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.lock)


def lock_ref(git_dir: Path, ref: str, new: str, old: str | None, *, fsync: bool = True,
             stale_after: float = 10.0, timeout: float = 30.0) -> RefUpdate | None:
    """Lock ``ref`` and write ``new`` into its lock file iff the ref is still ``old`` (None:
    absent; on a mismatch the lock is released and None returned). ``fsync``: the new value
    is on disk before this returns; without it, the caller makes it durable before
    :meth:`RefUpdate.commit` (a file-system sync shared with other writes)."""
    ref_path = git_dir / ref
    lock = ref_path.with_name(ref_path.name + ".lock")
    fd = _acquire(lock, stale_after, timeout)
    try:
        if read_ref(git_dir, ref) != old:
            os.close(fd)
            fd = -1
            os.unlink(lock)
            return None
        os.write(fd, f"{new}\n".encode())
        if fsync:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        return RefUpdate(lock, ref_path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        raise


def fsync_dir(path: Path) -> None:
    """Make the entries of directory ``path`` (a rename into it) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _acquire(lock: Path, stale_after: float, timeout: float) -> int:
    """Create the lock file exclusively; break it if stale, back off while it is live."""
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while True:
        try:
            return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pass
        except FileNotFoundError:  # the ref's directory does not exist yet
            lock.parent.mkdir(parents=True, exist_ok=True)
        if break_if_stale(lock, stale_after):
            continue
        if time.monotonic() > deadline:
            raise RefLockTimeout(f"{lock} held for more than {timeout} s")
        time.sleep(delay * (1 + random.random()))  # noqa: S311 - jitter, not crypto
        delay = min(delay * 2, 0.05)


def break_if_stale(lock: Path, stale_after: float) -> bool:
    """Remove a lock left by a killed writer (older than ``stale_after`` seconds)."""
    try:
        st = os.stat(lock)
    except FileNotFoundError:
        return True  # released meanwhile: retry at once
    if time.time() - st.st_mtime < stale_after:
        return False
    with contextlib.suppress(FileNotFoundError):
        if os.stat(lock).st_ino == st.st_ino:  # still the same stale file
            os.unlink(lock)
    return True
