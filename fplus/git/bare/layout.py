"""Where bare repositories live: ``<repos>/<uuid>.git``, ``<repos>`` being ``repos`` in the Git
server's data dir. A repo is named by its uuid (lower case, as every service writes it)."""

from __future__ import annotations

import uuid as _uuid
from pathlib import Path

DEFAULT_BRANCH = "main"
"""The branch a new repo's HEAD names."""

SUFFIX = ".git"
REPOS = "repos"


def repos_dir(data_dir: Path) -> Path:
    """The repos directory of a Git server whose data dir is ``data_dir``."""
    return Path(data_dir) / REPOS


def is_repo_uuid(value: object) -> bool:
    """True for a lower-case, hyphenated UUID: the only names a repo may have (they become
    paths). The same form as :func:`fplus.config_store.uuids.is_uuid`."""
    if not isinstance(value, str):
        return False
    try:
        return str(_uuid.UUID(value)) == value
    except ValueError:
        return False


def repo_path(root: Path, uuid: str) -> Path:
    """Where the repo ``uuid`` lives under the repos directory ``root``; ValueError for a
    name that is not a repo uuid."""
    if not is_repo_uuid(uuid):
        raise ValueError(f"not a repo uuid: {uuid!r}")
    return Path(root) / f"{uuid}{SUFFIX}"


def stored(root: Path) -> list[str]:
    """The uuids of the repos under ``root``, sorted (directories being created are not)."""
    names = (p.name.removesuffix(SUFFIX) for p in Path(root).glob(f"*{SUFFIX}"))
    return sorted(name for name in names if is_repo_uuid(name))
