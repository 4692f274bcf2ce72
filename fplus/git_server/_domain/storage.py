"""Bare repositories on disk: ``<data>/repos/<uuid>.git``, created lazily with HEAD → main.

The format (paths, creation) is :mod:`fplus.git.bare`'s, shared with the Cluster Manager when
it writes into these repos directly; this adds what only the Git server does with them.
"""

from __future__ import annotations

import time
from pathlib import Path

from fplus.git import bare
from fplus.git.repo.reader import branches

DEFAULT_BRANCH = bare.DEFAULT_BRANCH


class RepoStorage:
    """The repos directory."""

    def __init__(self, data_dir: Path) -> None:
        self.root = bare.repos_dir(data_dir)
        self.archive = data_dir / "archive"
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, uuid: str) -> Path:
        """Where a repo lives (uuid validated: it becomes a path)."""
        return bare.repo_path(self.root, uuid)

    def ensure(self, uuid: str) -> Path:
        """Create the bare repo if missing (idempotent, safe against a concurrent creator)."""
        return bare.create(self.path(uuid), DEFAULT_BRANCH)

    def exists(self, uuid: str) -> bool:
        """True if the repo has storage."""
        return bare.exists(self.path(uuid))

    def stored(self) -> list[str]:
        """Uuids with storage."""
        return bare.stored(self.root)

    def branches(self, uuid: str) -> dict[str, str]:
        """``{branch: sha}`` of a stored repo."""
        return branches(self.path(uuid))

    def delete(self, uuid: str) -> bool:
        """Move a repo's storage into ``archive/`` (nothing is destroyed); True if it existed."""
        path = self.path(uuid)
        if not path.exists():
            return False
        self.archive.mkdir(exist_ok=True)
        stamp = f"{time.strftime('%Y%m%dT%H%M%S')}.{time.time_ns() % 1_000_000_000:09d}"
        try:
            path.rename(self.archive / f"{uuid}.{stamp}.git")
        except FileNotFoundError:  # a concurrent delete moved it first
            return False
        return True
