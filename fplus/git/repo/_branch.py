"""The one batch-and-retry loop of both writers: build a commit of a batch of change sets on
the branch head, publish it, and on a lost race rebuild on the new head.

The local writer publishes the commit's pack with a compare-and-swap of the ref; the remote
one by a fast-forward push. They differ only in :meth:`BranchWriter._head` and
:meth:`BranchWriter._publish`.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Sequence

import pygit2

from fplus.git.repo._batch import GroupCommitter
from fplus.git.repo._build import Built, Pending, build_commit, check_identity
from fplus.git.repo.changes import ChangeSet, WriteResult


class BranchWriter:
    """Applies :class:`ChangeSet` s to one branch, batching concurrent callers (thread-safe)."""

    jitter: tuple[float, float] = (0.0, 0.005)
    """Seconds to wait (uniformly drawn) before rebuilding after a lost race."""
    fsync_packs = True
    """Whether a commit's pack files are fsynced as they are written (else :meth:`_publish`
    makes them durable)."""

    def __init__(self, repo: pygit2.Repository, branch: str, author: tuple[str, str],
                 max_attempts: int) -> None:
        """Subclasses call :meth:`check` before they open or create ``repo``."""
        self._repo = repo
        self.branch = branch
        self._author = author
        self._max_attempts = max_attempts
        self._group = GroupCommitter(self._commit_batch, turn=self._turn)

    @staticmethod
    def check(branch: str, author: tuple[str, str]) -> str:
        """``refs/heads/<branch>``; ValueError for an invalid ref name or author identity."""
        ref = f"refs/heads/{branch}"
        if not pygit2.reference_is_valid_name(ref):
            raise ValueError(f"invalid branch name: {branch!r}")
        check_identity(*author)
        return ref

    def apply(self, changes: ChangeSet, message: str) -> WriteResult:
        """Commit ``changes`` with ``message`` (unless they change nothing); return the head."""
        return self._group.submit(changes, message)

    def _turn(self) -> contextlib.AbstractContextManager[object]:
        """Held from before a batch is taken until it is committed: this writer's turn among
        the processes writing the branch (none by default)."""
        return contextlib.nullcontext()

    def _head(self) -> str | None:
        """The branch's current head (None: no such branch yet)."""
        raise NotImplementedError

    def _publish(self, built: Built) -> str | None:
        """Publish ``built.pack`` and move the branch from ``built.parent`` to
        ``built.commit``; None on success, else why not (what was not published is then
        discarded)."""
        raise NotImplementedError

    def _gave_up(self, reason: str) -> Exception:
        """The error for a branch that kept moving on every attempt."""
        raise NotImplementedError

    def _commit_batch(self, batch: Sequence[Pending]) -> list[WriteResult | Exception]:
        reason = ""
        for _ in range(self._max_attempts):
            parent = self._head()
            built = build_commit(self._repo, parent, batch, self._author,
                                 fsync=self.fsync_packs)
            if built.commit is None:
                return built.results(parent)
            assert built.pack is not None
            try:
                refused = self._publish(built)
            except BaseException:
                built.pack.discard()
                raise
            if refused is None:
                return built.results(built.commit)
            built.pack.discard()  # built on a head that moved: never published
            reason = refused
            time.sleep(random.uniform(*self.jitter))  # noqa: S311 - jitter, not crypto
        raise self._gave_up(reason)
