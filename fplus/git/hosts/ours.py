"""The cluster repos on our Git server: straight into its bare repos when they are on this
machine, otherwise through the remote writer over HTTP. The Git mechanics are
:mod:`fplus.git.repo`'s, where a repo lives on disk :mod:`fplus.git.bare`'s; this only maps a
cluster uuid to its repo.

Of the :class:`~fplus.git.store.RepoStore` seam, :meth:`claim`, :meth:`create` and
:meth:`revoke_reader` have nothing to do here: a repo exists because its Git repository
configuration entry does, and Flux's access is its Config Store principal's.
:class:`fplus.git.hosts.gitea.GiteaRepos` does them through Gitea's API."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import requests

from fplus.git import bare
from fplus.git.repo import (
    ChangeSet,
    CommitInfo,
    RemoteRepoWriter,
    WriteResult,
    commit_info,
    head,
    history,
    read_files,
    trust_ca_file,
    writer_for,
)

from .host import GitHost, our_repo_url

MAX_REMEMBERED_PATHS = 100_000
"""Cluster repo paths remembered (all are forgotten when there are more)."""


class GitServerRepos:
    """Writes, reads and archives cluster repos on our Git server."""

    def __init__(self, host: GitHost, username: str, password: str,
                 ca_file: str | None = None) -> None:
        """``ca_file``: the PEM bundle HTTPS to the Git server is verified against (None: the
        system's CAs)."""
        self.host = host
        self._verify: str | bool = ca_file or True
        if ca_file is not None:
            trust_ca_file(ca_file)
        self._auth = (username, password)
        self._remote: dict[str, RemoteRepoWriter] = {}
        self._lock = threading.Lock()
        self._paths: dict[str, Path] = {}
        """Each cluster's repo on this machine, worked out once (a seal asks for it)."""
        self._written: list[Callable[[str], None]] = []

    def claim(self, cluster: str, name: str) -> None:
        """Refuse (:class:`RepoTaken`) if the repo ``cluster`` would be named ``name`` is
        held by something else; nothing is made (our server: the name claim suffices)."""

    def create(self, cluster: str, name: str) -> None:
        """Make the repo and Flux's read access to it (idempotent; our server: the Git
        repository configuration entry made it)."""

    def revoke_reader(self, cluster: str) -> None:
        """Flux's access to the repo goes (our server: with its Config Store principal)."""

    def _base(self) -> str:
        return self.host.url.rstrip("/")

    def on_write(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(cluster)`` after each :meth:`write` to the cluster's repo."""
        self._written.append(listener)

    def write(self, cluster: str, changes: ChangeSet, message: str) -> WriteResult:
        """Apply ``changes`` to the cluster's ``main`` branch as one commit (or none)."""
        if self._on_disk():
            result = writer_for(self._local(cluster)).apply(changes, message)
        else:
            result = self._remote_writer(cluster).apply(changes, message)
        for listener in self._written:  # even unchanged: a batch it joined may have moved
            listener(cluster)
        return result

    def read_dir(self, cluster: str, prefix: str,
                 keep: Callable[[str], bool] | None = None) -> dict[str, bytes]:
        """Every file under ``prefix`` on the cluster's ``main`` branch (path → content);
        only those whose path ``keep`` accepts, if given (the others are not read)."""
        if not self._on_disk():
            return self._remote_writer(cluster).fetch_files(prefix, keep)
        return read_files(self._local(cluster), prefix, keep=keep)

    def head(self, cluster: str) -> str | None:
        """The commit the cluster's ``main`` branch is at (None: no repo or no commit yet)."""
        if not self._on_disk():
            return self._remote_writer(cluster).remote_head()
        return head(self._local(cluster))

    def history(self, cluster: str, limit: int = 20) -> list[CommitInfo]:
        """The newest ``limit`` commits of the cluster's ``main`` branch, newest first."""
        if not self._on_disk():
            return self._remote_writer(cluster).history(limit)
        return history(self._local(cluster), limit=limit)

    def commit(self, cluster: str, sha: str) -> CommitInfo | None:
        """The commit ``sha`` of the cluster's ``main`` branch with the paths it changed
        (None: not a commit of that branch)."""
        if not self._on_disk():
            return self._remote_writer(cluster).commit_info(sha)
        return commit_info(self._local(cluster), sha)

    def _local(self, cluster: str) -> Path:
        """The cluster's repo in the Git server's repos directory on this machine."""
        path = self._paths.get(cluster)
        if path is None:
            assert self.host.repos_dir is not None
            path = bare.repo_path(self.host.repos_dir, cluster)
            if len(self._paths) >= MAX_REMEMBERED_PATHS:
                self._paths.clear()
            self._paths[cluster] = path
        return path

    def _on_disk(self) -> bool:
        """True when the repos are written straight into the Git server's directory."""
        return self.host.repos_dir is not None

    def _remote_url(self, cluster: str) -> str:
        """Where the remote writer fetches and pushes the repo of ``cluster``."""
        return our_repo_url(self._base(), cluster)

    def _remote_writer(self, cluster: str) -> RemoteRepoWriter:
        url = self._remote_url(cluster)
        with self._lock:
            writer = self._remote.get(cluster)
            if writer is None or writer.url != url:
                writer = self._remote[cluster] = RemoteRepoWriter(
                    url, self._cache_dir() / cluster, self._auth[0], self._auth[1])
            return writer

    def _cache_dir(self) -> Path:
        return self.host.cache_dir

    def archive(self, cluster: str) -> None:
        """Ask the Git server to archive the repo's storage (a missing repo is fine)."""
        resp = requests.delete(f"{self._base()}/v1/storage/{cluster}", auth=self._auth,
                               timeout=30, verify=self._verify)
        if resp.status_code not in (204, 404):
            resp.raise_for_status()
