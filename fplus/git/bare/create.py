"""Creating a bare repository, as small as git accepts: the directories we write into,
``HEAD`` and ``config`` (git makes ``objects/info``, ``refs/tags`` … when it needs them).

``pygit2.init_repository`` also writes hook samples, a description and an exclude file
(none of which a bare repo served over smart HTTP uses): twice the file-system calls, which
dominate creating a cluster's repository.

Creation happens in a scratch directory renamed into place, so concurrent creators (other
threads, or processes: the Git server and the Cluster Manager) end up sharing one intact
repository.
"""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

from .layout import DEFAULT_BRANCH

_BARE_DIRS = ("objects", "objects/pack", "refs", "refs/heads")
_BARE_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n"


def exists(path: Path) -> bool:
    """True if a repository is at ``path`` (its ``HEAD`` is there)."""
    return (Path(path) / "HEAD").exists()


def create(path: Path, branch: str = DEFAULT_BRANCH) -> Path:
    """The bare repo at ``path``, created (HEAD → ``branch``, parent directories too) if
    missing; idempotent. A directory already there is left as it is."""
    path = Path(path)
    if exists(path):
        return path
    scratch = path.parent / f".{path.name}.init-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        _init_bare(scratch, branch)
    except FileNotFoundError:  # the first repository under this directory
        path.parent.mkdir(parents=True, exist_ok=True)
        _init_bare(scratch, branch)
    try:
        os.rename(scratch, path)  # replaces a missing path or an empty directory
    except OSError:  # someone else created it first
        shutil.rmtree(scratch, ignore_errors=True)
    return path


def _init_bare(path: Path, branch: str) -> None:
    os.mkdir(path)
    for sub in _BARE_DIRS:
        os.mkdir(path / sub)
    (path / "config").write_text(_BARE_CONFIG)
    (path / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
