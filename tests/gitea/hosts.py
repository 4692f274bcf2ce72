"""The two Git providers as the parametrised suite sees them: a running stack and how to
reach a cluster's repo on it (as the host's administrator, or as whoever holds some
credentials), so one test body checks the same behaviour on our Git server and on Gitea."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fplus.config_store import uuids
from harness.gitcli import GIT_ENV
from harness.gitea import Gitea
from harness.gitea_stack import GiteaStack
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack

SHARED_CHARTS = uuids.Shared.HelmChartsRepo


@dataclass
class Host:
    """A stack (``ours``: Config Store, Git server, Cluster Manager; ``gitea``: Config Store,
    Cluster Manager, Gitea) and its repos' addresses."""

    kind: str
    stack: Stack | GiteaStack

    @property
    def admin(self) -> Api:
        """The Config Store's root administrator."""
        return self.stack.admin

    @property
    def manager(self) -> Api:
        """The Cluster Manager's API as the root administrator."""
        return Api(self.stack.manager.url, ("admin", ADMIN_PASSWORD))

    @property
    def gitea(self) -> Gitea:
        assert isinstance(self.stack, GiteaStack)
        return self.stack.gitea

    def url(self, cluster: str, name: str, user: str | None = None,
            secret: str | None = None) -> str:
        """The repo of ``cluster`` (named ``name``) over HTTP, as ``user`` (default: the
        host's administrator)."""
        if isinstance(self.stack, GiteaStack):
            return self.gitea.clone_url(self.stack.org, name, user, secret)
        who = f"{quote(user or 'admin', safe='')}:{quote(secret or ADMIN_PASSWORD, safe='')}"
        return f"http://{who}@127.0.0.1:{self.stack.git.port}/uuid/{cluster}"

    def repo_address(self, cluster: str, name: str) -> str:
        """The URL edges are given (no credentials)."""
        if isinstance(self.stack, GiteaStack):
            return f"{self.gitea.url}/{self.stack.org}/{name}.git"
        return f"{self.stack.git.url}/uuid/{cluster}"

    def head(self, cluster: str, name: str) -> str | None:
        """The repo's ``main`` as the administrator sees it (None: no such branch)."""
        out = run_git("ls-remote", self.url(cluster, name), "refs/heads/main")
        assert out.returncode == 0, out.stderr
        return out.stdout.split()[0] if out.stdout.strip() else None

    def gitea_repo(self, name: str) -> dict[str, Any] | None:
        """The Gitea repo ``org/name`` (None: none; a name Gitea keeps as a redirect to a
        renamed repo is none)."""
        assert isinstance(self.stack, GiteaStack)
        got = self.gitea.api().get(f"{self.gitea.url}/api/v1/repos/{self.stack.org}/{name}",
                                   timeout=30)
        found = got.json() if got.status_code == 200 else None
        return found if found is not None and found["name"] == name else None


def run_git(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """git, isolated from the user's configuration, not raising."""
    return subprocess.run(["git", "-c", "init.defaultBranch=main", *map(str, args)], cwd=cwd,
                          env=os.environ | GIT_ENV, capture_output=True, text=True,
                          timeout=120, check=False)
