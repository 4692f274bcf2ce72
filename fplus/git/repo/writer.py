"""Commit change sets straight into a branch of a bare repository (no clone, no work tree)."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

import pygit2
from pygit2.enums import RepositoryOpenFlag

from fplus.git import bare
from fplus.git.bare import RefUpdate, lock_ref, read_ref
from fplus.git.bare.refs import fsync_dir
from fplus.git.bare.turns import Turns
from fplus.git.repo._branch import BranchWriter
from fplus.git.repo._build import Built
from fplus.git.repo._durable import SharedSync, shared_sync
from fplus.git.repo._maintenance import merge_small_packs
from fplus.git.repo._pack import StagedPack
from fplus.git.repo._registry import ProcessRegistry
from fplus.serving.background import offload

log = logging.getLogger(__name__)

AUTHOR_NAME = "Edge deployment operator"
AUTHOR_EMAIL = "cluster-manager@localhost"


class RefConflict(RuntimeError):
    """The branch kept moving under us for more than the allowed number of attempts."""


def open_repository(path: Path) -> pygit2.Repository:
    """Open exactly ``path`` as a repository (never a parent directory's)."""
    return pygit2.Repository(str(path), RepositoryOpenFlag.NO_SEARCH)


def ensure_bare_repo(path: Path, branch: str = "main") -> pygit2.Repository:
    """Open the bare repo at ``path``, creating it (HEAD → ``branch``) if missing, in the
    format :mod:`fplus.git.bare` owns (off the gevent hub: it is file-system calls)."""
    path = Path(path)
    if bare.exists(path):  # one stat; failing to open a missing repo costs far more
        try:
            return open_repository(path)
        except pygit2.GitError:
            pass
    offload.run(bare.create, path, branch)
    return open_repository(path)


class RepoWriter(BranchWriter):
    """Applies :class:`ChangeSet` s to one branch of one bare repository, batching callers.

    Thread-safe: concurrent ``apply`` calls are grouped into one commit. Safe against other
    processes too (another writer, ``git receive-pack``): the ref moves only by compare-and-swap
    under git's lock file, and a lost race rebuilds the batch on the new head. Writers in
    several processes take turns (:mod:`fplus.git.bare.turns`), so they seldom race at all:
    one builds while the others gather their next batches.

    Crash-safe: the ref moves only once the commit's objects are on disk, and ``apply``
    returns only once the moved ref is. Where the file system can be synced as a whole
    (:mod:`fplus.git.bare.durable`), the pack and the ref's new value are written without
    fsyncs and made durable by a sync shared with every writer of the process syncing at the
    same time (other repos' too: :mod:`._durable`), then renamed into place and synced again;
    elsewhere each file is fsynced, and each rename's directory after it.
    """

    def __init__(self, repo_path: Path, branch: str = "main",
                 author_name: str = AUTHOR_NAME, author_email: str = AUTHOR_EMAIL, *,
                 stale_lock_after: float = 10.0, lock_timeout: float = 30.0,
                 max_attempts: int = 100, max_small_packs: int = 32) -> None:
        self.ref = self.check(branch, (author_name, author_email))
        self.repo_path = Path(repo_path)
        self._stale_after, self._lock_timeout = stale_lock_after, lock_timeout
        self._max_small_packs, self._commits = max_small_packs, 0
        repo = ensure_bare_repo(self.repo_path, branch)
        self._git_dir = Path(repo.path)
        self.turns = Turns(self._git_dir, timeout=lock_timeout)
        """This writer's turns among the processes committing to the repo."""
        self._sync: SharedSync | None = shared_sync(self._git_dir)
        self.fsync_packs = self._sync is None
        super().__init__(repo, branch, (author_name, author_email), max_attempts)

    def head(self) -> str | None:
        """The branch's current commit id, or None if the branch does not exist yet."""
        return read_ref(self._git_dir, self.ref)

    def _head(self) -> str | None:
        return self.head()

    def _turn(self) -> contextlib.AbstractContextManager[bool]:
        return self.turns.taken()

    def _publish(self, built: Built) -> str | None:
        assert built.commit is not None and built.pack is not None
        update = offload.run(self._lock, built.commit, built.parent)
        if update is None:
            return "the branch moved"
        try:
            self._flush()  # the pack and the ref's new value on disk before the ref moves
            offload.run(_move, built.pack, update, self._sync is None)
        except BaseException:
            update.abort()
            raise
        self._flush()  # and the move, before anyone is told
        self._after_commit()
        return None

    def _lock(self, commit: str, parent: str | None) -> RefUpdate | None:
        """Lock the ref with ``commit`` as its new value iff it is at ``parent`` (file-system
        calls, an fsync unless a shared sync follows: run off the hub)."""
        return lock_ref(self._git_dir, self.ref, commit, parent, fsync=self._sync is None,
                        stale_after=self._stale_after, timeout=self._lock_timeout)

    def _flush(self) -> None:
        if self._sync is not None:
            self._sync.flush()

    def _gave_up(self, reason: str) -> Exception:
        return RefConflict(f"{self.ref} in {self.repo_path} kept moving; gave up")

    def _after_commit(self) -> None:
        """Every few commits, merge the small packs they left once there are too many."""
        self._commits += 1
        if self._commits % 8 == 0:
            try:  # reads and writes packs: off the hub too
                offload.run(merge_small_packs, self._repo, self._max_small_packs)
            except Exception:  # the commit is done; maintenance retries later
                log.exception("merging small packs in %s failed", self.repo_path)


def _move(pack: StagedPack, update: RefUpdate, fsync: bool) -> None:
    """The pack into place, then the ref (renames: run off the hub); ``fsync``: each
    rename's directory synced after it, the pack's before the ref moves (without it, the
    caller's file-system sync follows)."""
    pack.publish(fsync)
    update.commit()
    if fsync:
        fsync_dir(update.ref_path.parent)


_writers: ProcessRegistry[tuple[Path, str], RepoWriter] = ProcessRegistry()
_as_given: ProcessRegistry[tuple[str, str], RepoWriter] = ProcessRegistry()
"""The same writers by the path as callers give it: a seal finds its writer without
resolving the path again."""


def writer_for(repo_path: Path | str, branch: str = "main") -> RepoWriter:
    """The process-wide shared writer for (repo, branch): where batching happens."""
    return _as_given.get((os.fspath(repo_path), branch), lambda: _shared(repo_path, branch))


def _shared(repo_path: Path | str, branch: str) -> RepoWriter:
    key = (Path(os.path.abspath(repo_path)), branch)
    return _writers.get(key, lambda: RepoWriter(key[0], branch))
