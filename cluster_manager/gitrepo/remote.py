"""The same ``apply()`` for a repository we do not host: fetch, build locally, push, retry.

A local bare mirror in ``cache_dir`` holds the objects; each batch is built on the freshly
fetched remote head and pushed as a fast-forward. A rejected push (someone else pushed first)
means fetch and rebuild, a bounded number of times.
"""

from __future__ import annotations

import contextlib
import random
import time
from pathlib import Path

import pygit2

from cluster_manager.repo._batch import GroupCommitter
from cluster_manager.repo._build import Pending, build_commit, check_identity
from cluster_manager.repo._maintenance import merge_small_packs
from cluster_manager.repo.changes import ChangeSet, WriteResult
from cluster_manager.repo.reader import list_files, read_file
from cluster_manager.repo.writer import AUTHOR_EMAIL, AUTHOR_NAME, ensure_bare_repo

_REJECTION_HINTS = ("fastforward", "fast-forward", "not present locally", "fetch first",
                    "failed to update", "failed to lock", "stale info")


class PushRejected(RuntimeError):
    """The remote rejected our push on every attempt."""


class _Callbacks(pygit2.RemoteCallbacks):
    def __init__(self, username: str | None, password: str | None) -> None:
        creds = pygit2.UserPass(username, password or "") if username is not None else None
        super().__init__(credentials=creds)
        self.rejected: list[str] = []

    def push_update_reference(self, refname: str, message: str | None) -> None:
        if message is not None:
            self.rejected.append(f"{refname}: {message}")


class RemoteRepoWriter:
    """Applies :class:`ChangeSet` s to ``branch`` of the repository at ``url`` (HTTP(S)).

    Thread-safe and batching like :class:`RepoWriter`; use one instance per ``cache_dir``.
    """

    def __init__(self, url: str, cache_dir: Path, username: str | None = None,
                 password: str | None = None, branch: str = "main",
                 author_name: str = AUTHOR_NAME, author_email: str = AUTHOR_EMAIL, *,
                 max_attempts: int = 10) -> None:
        if not pygit2.reference_is_valid_name(f"refs/heads/{branch}"):
            raise ValueError(f"invalid branch name: {branch!r}")
        self.url, self.branch = url, branch
        self._credentials = (username, password)
        check_identity(author_name, author_email)
        self._author = (author_name, author_email)
        self._max_attempts = max_attempts
        self._repo = ensure_bare_repo(Path(cache_dir), branch)
        if "origin" in self._repo.remotes.names():
            if self._repo.remotes["origin"].url != url:
                self._repo.remotes.set_url("origin", url)
        else:
            self._repo.remotes.create("origin", url, "+refs/heads/*:refs/remotes/origin/*")
        self._tracking = f"refs/remotes/origin/{branch}"
        self._group = GroupCommitter(self._commit_batch)

    def apply(self, changes: ChangeSet, message: str) -> WriteResult:
        """Commit ``changes`` to the remote branch (unless they change nothing); return its head."""
        return self._group.submit(changes, message)

    def fetch_files(self, prefix: str) -> dict[str, bytes]:
        """Every file under ``prefix`` at the remote branch head, freshly fetched."""
        self._fetch()
        path = Path(self._repo.path)
        return {p: data for p in list_files(path, prefix, self._tracking)
                if (data := read_file(path, p, self._tracking)) is not None}

    def _fetch(self) -> str | None:
        """Fetch the branch; return its remote head (None if the remote has no such branch)."""
        remote = self._repo.remotes["origin"]
        remote.fetch([f"+refs/heads/{self.branch}:{self._tracking}"],
                     callbacks=_Callbacks(*self._credentials), prune=pygit2.enums.FetchPrune.PRUNE)
        ref = self._repo.references.get(self._tracking)
        return str(ref.target) if ref is not None else None

    def _commit_batch(self, batch: list[Pending]) -> list[WriteResult | Exception]:
        last_error = ""
        for _ in range(self._max_attempts):
            parent = self._fetch()
            built = build_commit(self._repo, parent, batch, self._author)
            if built.commit is None:
                return built.results(parent)
            last_error = self._push(built.commit)
            if not last_error:
                tracking = pygit2.Oid(hex=built.commit)
                self._repo.references.create(self._tracking, tracking, force=True)
                with contextlib.suppress(Exception):  # pushed already; maintenance can wait
                    merge_small_packs(self._repo)
                return built.results(built.commit)
            time.sleep(random.uniform(0.005, 0.05))  # noqa: S311 - jitter, not crypto
        raise PushRejected(f"push to {self.url} rejected {self._max_attempts} times: {last_error}")

    def _push(self, commit: str) -> str:
        """Push ``commit`` as a fast-forward of the branch; '' on success, else the reason."""
        local = f"refs/heads/{self.branch}"
        self._repo.references.create(local, pygit2.Oid(hex=commit), force=True)
        callbacks = _Callbacks(*self._credentials)
        try:
            self._repo.remotes["origin"].push([f"{local}:{local}"], callbacks=callbacks)
        except pygit2.GitError as exc:
            if any(hint in str(exc).lower() for hint in _REJECTION_HINTS):
                return str(exc)
            raise
        return "; ".join(callbacks.rejected)
