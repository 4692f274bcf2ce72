"""Which host keeps the repos and how it is reached (:class:`GitHost`), as plain values the
service hands in; and the one spelling of each host's clone URL."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

OURS, GITEA = "ours", "gitea"
GIT_PROVIDERS = (OURS, GITEA)
"""Who hosts the repos: our Git server (driven by the Config Store's Git repository
entries), or a Gitea through its REST API (:mod:`fplus.git.hosts.gitea`)."""


@dataclass(frozen=True)
class GitHost:
    """Where the repos are and what their host is asked to do."""

    url: str
    """Our Git server's base URL, as this process reaches it (``<url>/uuid/<repo>``)."""
    cache_dir: Path
    """Where repos written over HTTP keep their local mirrors (one directory each)."""
    provider: str = OURS
    """``ours`` or ``gitea`` (:data:`GIT_PROVIDERS`)."""
    repos_dir: Path | None = None
    """Our Git server's repos directory, when on this machine: written directly."""
    gitea_url: str | None = None
    """The Gitea's base URL (``gitea`` only)."""
    gitea_org: str = ""
    """The Gitea organisation holding the repos."""
    gitea_teardown: str = "archive"
    """What an archived Gitea repo becomes: ``archive`` (renamed aside, read-only) or
    ``delete``."""
    rotation_grace: float = 0.0
    """Seconds an older Flux token on a Gitea stays once its successor was made."""
    shared: Mapping[str, str] = field(default_factory=dict)
    """The shared repos: uuid → name."""


def our_repo_url(base: str, repo: str) -> str:
    """The repo ``repo`` (its uuid) on our Git server at ``base``."""
    return f"{base.rstrip('/')}/uuid/{repo}"


def gitea_repo_url(base: str, org: str, name: str) -> str:
    """The repo ``name`` of the organisation ``org`` on the Gitea at ``base``."""
    return f"{base.rstrip('/')}/{org}/{name}.git"
