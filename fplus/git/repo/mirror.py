"""A branch of a bare repository set to a branch fetched from elsewhere (a mirror), and a
follower branch moved along only while nobody else moved it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from fplus.git.bare import compare_and_swap


@dataclass(frozen=True)
class Mirrored:
    """What :func:`mirror_branch` did."""

    commit: str
    """The fetched commit, where the branch now is."""
    follower_left: bool = False
    """True when the follower branch was left where it was (moved on since)."""
    follower_at: str | None = None
    """Where the follower branch was found (None: absent)."""


def mirror_branch(repo_path: Path, url: str, ref: str, branch: str, follower: str | None,
                  credentials: tuple[str, str] | None) -> Mirrored:
    """Fetch ``ref`` of ``url`` into ``branch``, whatever it held; ``follower`` (if any)
    follows only while it is missing or still where ``branch`` was before, by
    compare-and-swap (a push landing meanwhile is never overwritten). :class:`GitError
    <fplus.git.repo.errors.GitError>` when the fetch fails."""
    repo = pygit2.Repository(str(repo_path))
    before = repo.references.get(f"refs/heads/{branch}")
    before_id = str(before.target) if before is not None else None
    scratch = f"refs/mirror-fetch/{branch}"
    remote = repo.remotes.create_anonymous(url)
    remote.fetch([f"+refs/heads/{ref}:{scratch}"], callbacks=_Once(credentials), proxy=None)
    fetched = repo.references.get(scratch)
    if fetched is None:
        raise pygit2.GitError(f"{url} has no branch {ref}")
    commit = fetched.target
    repo.references.create(f"refs/heads/{branch}", commit, force=True)
    fetched.delete()
    if follower is None:
        return Mirrored(str(commit))
    found = repo.references.get(f"refs/heads/{follower}")
    at = str(found.target) if found is not None else None
    if (at is None or at == before_id) and compare_and_swap(
            Path(repo.path), f"refs/heads/{follower}", str(commit), at):
        return Mirrored(str(commit), follower_at=at)
    return Mirrored(str(commit), follower_left=at != str(commit), follower_at=at)


class _Once(pygit2.RemoteCallbacks):
    """Offers ``credentials`` (if any) the first time the upstream asks, and ends the fetch
    the next time: libgit2 would otherwise send them again after every 401."""

    def __init__(self, credentials: tuple[str, str] | None) -> None:
        super().__init__()
        self._left = credentials

    def credentials(self, url: str, username_from_url: str | None,
                    allowed_types: Any) -> pygit2.UserPass:
        if self._left is None:
            raise pygit2.GitError("the upstream asks for credentials: none (left) to send")
        found, self._left = self._left, None
        return pygit2.UserPass(*found)
