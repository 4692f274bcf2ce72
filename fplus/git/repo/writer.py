"""Commit change sets straight into a branch of a bare repository (no clone, no work tree)."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

import pygit2
from pygit2.enums import RepositoryOpenFlag

from fplus.git import bare
from fplus.git.bare import compare_and_swap, read_ref
from fplus.git.bare.turns import Turns
from fplus.git.repo._branch import BranchWriter
from fplus.git.repo._maintenance import merge_small_packs
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
        super().__init__(repo, branch, (author_name, author_email), max_attempts)

    def head(self) -> str | None:
        """The branch's current commit id, or None if the branch does not exist yet."""
        return read_ref(self._git_dir, self.ref)

    def _head(self) -> str | None:
        return self.head()

    def _turn(self) -> contextlib.AbstractContextManager[bool]:
        return self.turns.taken()

    def _publish(self, commit: str, parent: str | None) -> str | None:
        if not offload.run(self._swap, commit, parent):
            return "the branch moved"
        self._after_commit()
        return None

    def _swap(self, commit: str, parent: str | None) -> bool:
        """Compare-and-swap the ref (file-system calls and an fsync: run off the hub)."""
        return compare_and_swap(self._git_dir, self.ref, commit, parent,
                                stale_after=self._stale_after, timeout=self._lock_timeout)

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
