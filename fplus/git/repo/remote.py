"""The same ``apply()`` for a repository we do not host: fetch, build locally, push, retry.

A local bare mirror in ``cache_dir`` holds the objects; each batch is built on the freshly
fetched remote head and pushed as a fast-forward. A rejected push (someone else pushed first)
means fetch and rebuild, a bounded number of times.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import pygit2

from fplus.git.repo._branch import BranchWriter
from fplus.git.repo._build import Built
from fplus.git.repo._maintenance import merge_small_packs
from fplus.git.repo.reader import CommitInfo, commit_info, history, read_files
from fplus.git.repo.writer import AUTHOR_EMAIL, AUTHOR_NAME, ensure_bare_repo

_REJECTION_HINTS = ("fastforward", "fast-forward", "not present locally", "fetch first",
                    "failed to update", "failed to lock", "stale info")


def trust_ca_file(path: str) -> None:
    """Verify HTTPS remotes against the PEM bundle ``path`` instead of the system's CAs
    (process-wide: libgit2 keeps one setting)."""
    pygit2.settings.set_ssl_cert_locations(path, None)


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


class RemoteRepoWriter(BranchWriter):
    """Applies :class:`ChangeSet` s to ``branch`` of the repository at ``url`` (HTTP(S)).

    Thread-safe and batching like :class:`RepoWriter`; use one instance per ``cache_dir``.
    """

    jitter = (0.005, 0.05)

    def __init__(self, url: str, cache_dir: Path, username: str | None = None,
                 password: str | None = None, branch: str = "main",
                 author_name: str = AUTHOR_NAME, author_email: str = AUTHOR_EMAIL, *,
                 max_attempts: int = 10) -> None:
        self.check(branch, (author_name, author_email))
        self.url = url
        self._credentials = (username, password)
        repo = ensure_bare_repo(Path(cache_dir), branch)
        super().__init__(repo, branch, (author_name, author_email), max_attempts)
        if "origin" in repo.remotes.names():
            if repo.remotes["origin"].url != url:
                repo.remotes.set_url("origin", url)
        else:
            repo.remotes.create("origin", url, "+refs/heads/*:refs/remotes/origin/*")
        self._tracking = f"refs/remotes/origin/{branch}"

    def fetch_files(self, prefix: str,
                    keep: Callable[[str], bool] | None = None) -> dict[str, bytes]:
        """Every file under ``prefix`` (that ``keep`` accepts, if given) at the remote branch
        head, freshly fetched."""
        self._fetch()
        return read_files(Path(self._repo.path), prefix, self._tracking, keep)

    def history(self, limit: int) -> list[CommitInfo]:
        """The newest ``limit`` commits of the remote branch, freshly fetched."""
        self._fetch()
        return history(Path(self._repo.path), self._tracking, limit)

    def commit_info(self, sha: str) -> CommitInfo | None:
        """The commit ``sha`` of the remote branch, with the paths it changed."""
        self._fetch()
        return commit_info(Path(self._repo.path), sha, self._tracking)

    def remote_head(self) -> str | None:
        """The branch's commit on the remote, asked without fetching (None: no branch)."""
        wanted = f"refs/heads/{self.branch}"
        heads = self._repo.remotes["origin"].list_heads(callbacks=_Callbacks(*self._credentials))
        return next((str(h.oid) for h in heads if h.name == wanted), None)

    def _fetch(self) -> str | None:
        """Fetch the branch; return its remote head (None if the remote has no such branch)."""
        remote = self._repo.remotes["origin"]
        remote.fetch([f"+refs/heads/{self.branch}:{self._tracking}"],
                     callbacks=_Callbacks(*self._credentials), prune=pygit2.enums.FetchPrune.PRUNE)
        ref = self._repo.references.get(self._tracking)
        return str(ref.target) if ref is not None else None

    def _head(self) -> str | None:
        return self._fetch()

    def _publish(self, built: Built) -> str | None:
        assert built.commit is not None and built.pack is not None
        commit = built.commit
        built.pack.publish()  # into the local mirror: the push sends from there
        refused = self._push(commit)
        if refused:
            return refused
        self._repo.references.create(self._tracking, pygit2.Oid(hex=commit), force=True)
        with contextlib.suppress(Exception):  # pushed already; maintenance can wait
            merge_small_packs(self._repo)
        return None

    def _gave_up(self, reason: str) -> Exception:
        return PushRejected(f"push to {self.url} rejected {self._max_attempts} times: {reason}")

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
