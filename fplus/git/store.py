"""What every host of the cluster repos offers (:class:`RepoStore`), whoever hosts them:
the Cluster Manager's services and reconcile wing both type against it. A repo is named by
its uuid (a cluster's, or a shared repo's); every read and write is of its ``main`` branch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from fplus.git.repo import ChangeSet, CommitInfo, WriteResult


class RepoTaken(ValueError):
    """The repo a cluster would get is held by something else (nothing was changed)."""


class RepoStore(Protocol):
    """Where cluster repos are written, read and archived (:mod:`fplus.git.hosts`)."""

    def write(self, cluster: str, changes: ChangeSet, message: str) -> WriteResult:
        """Commit ``changes`` to the cluster's repo (no commit if nothing changed)."""

    def read_dir(self, cluster: str, prefix: str,
                 keep: Callable[[str], bool] | None = None) -> dict[str, bytes]:
        """Every file under ``prefix`` (that ``keep`` accepts, if given): path → content."""

    def head(self, cluster: str) -> str | None:
        """The commit the branch is at (None: no repo or no commit yet)."""

    def history(self, cluster: str, limit: int = 20) -> list[CommitInfo]:
        """The newest ``limit`` commits, newest first."""

    def commit(self, cluster: str, sha: str) -> CommitInfo | None:
        """The commit ``sha`` of the branch with the paths it changed (None: not one)."""

    def on_write(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(cluster)`` after each :meth:`write`."""

    def archive(self, cluster: str) -> None:
        """Move the cluster's repo aside (a missing repo is fine)."""

    def claim(self, cluster: str, name: str) -> None:
        """Refuse (:class:`RepoTaken`) if the repo named ``name`` is held by something else."""

    def create(self, cluster: str, name: str) -> None:
        """Make the repo and Flux's read access to it, where the Git host needs that."""

    def revoke_reader(self, cluster: str) -> None:
        """Flux's access to the repo goes, where the Git host keeps it apart."""
