"""Cluster Manager settings (command-line flags and environment)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fplus.config_store import uuids
from fplus.git.hosts.host import GITEA, OURS, GitHost, gitea_repo_url, our_repo_url

SHARED_REPO_NAMES = {uuids.Shared.HelmChartsRepo: "helm-charts",
                     uuids.Shared.FluxSystemRepo: "flux-system"}
"""The shared repos' names (the last part of their Git repository entries' paths)."""


@dataclass(frozen=True)
class Settings:
    """What the Cluster Manager needs to know about its surroundings."""

    config_store_url: str
    git_url: str
    """Base URL of the Git server as the edge sees it (``<git>/uuid/<cluster>``)."""
    data_dir: Path
    git_repos: Path | None = None
    """The Git server's repos directory, when on this machine: written directly."""
    git_internal_url: str | None = None
    """Base URL this service writes repos through, when not ``git_url`` (an in-cluster
    Service address where edges use an Ingress). Unused with ``git_repos``."""
    git_provider: str = OURS
    """``ours`` or ``gitea`` (:data:`fplus.git.hosts.host.GIT_PROVIDERS`)."""
    gitea_url: str | None = None
    """The Gitea's base URL, as edges and this service reach it (``gitea`` only)."""
    gitea_org: str = "edge-clusters"
    """The Gitea organisation holding the cluster and shared repos."""
    gitea_teardown: str = "archive"
    """What a teardown does to a Gitea repo: ``archive`` (renamed aside, read-only) or
    ``delete``."""
    organisation: str = "ACS"
    """Prefix of Sparkplug group ids: ``<organisation>-<cluster name>``."""
    edge_config_store_url: str | None = None
    edge_cluster_manager_url: str | None = None
    """This service as edges reach it (Edge Sync's tunnel); None: :attr:`external_url`. Every
    replica must render the same, so give them one (a load balancer's) address."""
    """The Config Store URL as the edge sees it (default: ``config_store_url``)."""
    edge_ca: str | None = None
    """PEM CA certificate(s) edges trust to reach the central services over HTTPS: the
    bootstrap script puts it in the edge's credential Secrets (``ca.crt``), where Flux and
    Edge Sync read it. None: edges trust their system CAs."""
    edge_sync_image: str = "ghcr.io/fplus-edge-manager/edge-sync:0.1.0"
    sealed_secrets_namespace: str = "sealed-secrets"
    sealed_secrets_chart_version: str = "2.17.3"
    air_gapped: bool = False
    """Edges reach nothing but this stack: no upstream chart repos are written (Sealed
    Secrets comes from the shared charts repo), and bootstrap scripts embed Flux."""
    workers: int = 8
    backoff_initial: float = 2.0
    backoff_max: float = 300.0
    external_url: str | None = None
    """This service's URL as users and edges reach it (bootstrap URLs start with it)."""
    bootstrap_token_ttl: float = 3600.0
    public_bootstrap: bool = False
    """ACS-style token-less bootstrap URLs; the script then carries no credentials."""
    flux_install_file: Path | None = None
    """A ``flux install --export`` file to embed in bootstrap scripts (air-gapped edges)."""
    bootstrap_wait_timeout: str = "300s"
    rotation_grace: float = 900.0
    """Seconds an edge's previous password stays valid after a bootstrap script rotated it
    (or until the new one is first used)."""
    teardown_timeout: float = 600.0
    """Seconds a teardown waits for the edge to apply its teardown commit."""
    edge_stale_after: float = 90.0
    """Seconds after an edge's last report at which it counts as Stale: its cluster's phase,
    and a rollout's ``offline`` gate."""
    body_limit: int = 1024 * 1024
    cluster_quota: int = 1000
    """Clusters one principal may have created through the API and not deleted (0: no
    quota; the root principal is exempt)."""
    auth_cache_seconds: float = 5.0
    audit_retention_days: float = 365.0
    """Days an audit row is kept (0: forever; :mod:`fplus.cluster_manager.audit`)."""
    database_url: str | None = None
    """``sqlite:///FILE`` or ``postgresql://…`` (default: :attr:`default_database_url`)."""
    leader_election: str = "auto"
    """``auto``, ``kubernetes``, ``database`` or ``off`` (:mod:`fplus.cluster_manager.leader`)."""
    lease_name: str = "cluster-manager"
    lease_namespace: str | None = None
    """The Kubernetes Lease's namespace (default: the pod's)."""
    lease_duration: float = 10.0
    """Seconds a leader holds the lease after its last renewal."""
    lease_renew: float = 2.5
    """Seconds between a leader's renewals."""
    lease_retry: float = 2.0
    """Seconds between a standby's attempts to take the lease."""

    def repo_url(self, repo: str, name: str) -> str:
        """The URL edges clone the repo ``repo`` (a cluster's or shared repo's uuid, its
        repo named ``name``) from."""
        if self.git_provider == GITEA and self.gitea_url:
            return gitea_repo_url(self.gitea_url, self.gitea_org, name)
        return our_repo_url(self.git_url, repo)

    @property
    def git_host(self) -> GitHost:
        """Where this service writes and reads the repos, for :mod:`fplus.git.hosts`."""
        return GitHost(url=self.git_internal_url or self.git_url,
                       cache_dir=self.data_dir / "repo-cache", provider=self.git_provider,
                       repos_dir=self.git_repos, gitea_url=self.gitea_url,
                       gitea_org=self.gitea_org, gitea_teardown=self.gitea_teardown,
                       rotation_grace=self.rotation_grace, shared=SHARED_REPO_NAMES)

    @property
    def git_reach_url(self) -> str:
        """What a bootstrap script checks the edge reaches before it changes anything."""
        if self.git_provider == GITEA and self.gitea_url:
            return f"{self.gitea_url.rstrip('/')}/api/healthz"
        return f"{self.git_url.rstrip('/')}/ping"

    @property
    def database(self) -> str:
        """The database URL in use."""
        return self.database_url or self.default_database_url

    @property
    def default_database_url(self) -> str:
        """The private SQLite file in the data dir (where bootstrap tokens always were)."""
        return default_database_url(self.data_dir)

    @property
    def edge_manager_url(self) -> str | None:
        """The Cluster Manager URL written into edge manifests (None: no tunnel)."""
        found = self.edge_cluster_manager_url or self.external_url
        return found.rstrip("/") if found else None

    @property
    def edge_store_url(self) -> str:
        """The Config Store URL written into edge manifests."""
        return self.edge_config_store_url or self.config_store_url


def default_database_url(data_dir: Path) -> str:
    """The private SQLite file in ``data_dir`` (where bootstrap tokens always were)."""
    return f"sqlite:///{data_dir / 'bootstrap-tokens.sqlite'}"
