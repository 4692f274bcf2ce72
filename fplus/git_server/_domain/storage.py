"""Bare repositories on disk: ``<data>/repos/<uuid>.git``, created lazily with HEAD → main."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pygit2

from fplus.config_store.uuids import is_uuid

DEFAULT_BRANCH = "main"


class RepoStorage:
    """The repos directory."""

    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "repos"
        self.archive = data_dir / "archive"
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, uuid: str) -> Path:
        """Where a repo lives (uuid validated: it becomes a path)."""
        if not is_uuid(uuid):
            raise ValueError(f"not a repo uuid: {uuid!r}")
        return self.root / f"{uuid}.git"

    def ensure(self, uuid: str) -> Path:
        """Create the bare repo if missing (idempotent, safe against a concurrent creator)."""
        path = self.path(uuid)
        if not (path / "HEAD").exists():
            tmp = self.root / f".{uuid}.{time.monotonic_ns()}.tmp"
            pygit2.init_repository(str(tmp), bare=True, initial_head=DEFAULT_BRANCH)
            try:
                tmp.rename(path)
            except OSError:
                shutil.rmtree(tmp, ignore_errors=True)  # someone else created it first
        return path

    def exists(self, uuid: str) -> bool:
        """True if the repo has storage."""
        return (self.path(uuid) / "HEAD").exists()

    def stored(self) -> list[str]:
        """Uuids with storage."""
        return sorted(p.name.removesuffix(".git") for p in self.root.glob("*.git")
                      if is_uuid(p.name.removesuffix(".git")))

    def branches(self, uuid: str) -> dict[str, str]:
        """``{branch: sha}`` of a stored repo."""
        repo = pygit2.Repository(str(self.path(uuid)))
        return {name: str(repo.branches.local[name].target)
                for name in repo.branches.local}

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
