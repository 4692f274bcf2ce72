"""Building the host :attr:`GitHost.provider <fplus.git.hosts.host.GitHost.provider>` names."""

from __future__ import annotations

from collections.abc import Callable

from fplus.git.store import RepoStore

from .gitea import GiteaRepos
from .gitea_api import GiteaClient
from .host import GITEA, GitHost
from .ours import GitServerRepos


def open_store(host: GitHost, user: str, password: str, ca_file: str | None,
               gitea_token: str | None, name_of: Callable[[str], str | None]) -> RepoStore:
    """The repos of ``host.provider``: our Git server's (as ``user``), or Gitea's (as the
    holder of ``gitea_token``; ``name_of`` as for :class:`GiteaRepos`)."""
    if host.provider != GITEA:
        return GitServerRepos(host, user, password, ca_file)
    assert host.gitea_url is not None and gitea_token is not None
    client = GiteaClient(host.gitea_url, gitea_token, verify=ca_file or True)
    return GiteaRepos(host, client, gitea_token, name_of, ca_file)
