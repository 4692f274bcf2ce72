"""A Config Store and a Cluster Manager whose repos a real Gitea hosts (``--git-provider
gitea``); the Gitea itself is :func:`harness.gitea.start_gitea`'s."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.gitea import Gitea
from harness.servers import ADMIN_PASSWORD, Api, ServiceProcess, stop_all

ORG = "edge-clusters"
TOKEN_ENV = "FPLUS_GITEA_TOKEN"  # noqa: S105  (the variable's name)


@dataclass
class GiteaStack:
    """The Config Store and the Cluster Manager writing to ``gitea``'s ``org``."""

    root: Path
    store: ServiceProcess
    manager: ServiceProcess
    gitea: Gitea
    org: str = ORG

    @property
    def admin(self) -> Api:
        return Api(self.store.url, ("admin", ADMIN_PASSWORD))

    def stop(self) -> None:
        stop_all((self.manager, self.store))


def manager_process(data_dir: Path, store_url: str, gitea: Gitea, token: str | None,
                    *extra: str, org: str = ORG, seed: bool = True) -> ServiceProcess:
    """A ``cluster-manager serve`` on Gitea, seeded first (unless not ``seed``: one that
    is to stop before it logs in), the token in its environment (none: ``token`` None);
    ``--git`` names a port nothing answers on."""
    settings = {TOKEN_ENV: token} if token is not None else {}
    return ServiceProcess(data_dir, module="fplus.cluster_manager.cli", admin_password=None,
                          seed_from=store_url if seed else None, settings=settings,
                          log_level="INFO",
                          extra_args=("--config-store", store_url, "--git",
                                      "http://127.0.0.1:9", "--git-provider", "gitea",
                                      "--gitea-url", gitea.url, "--gitea-org", org,
                                      "--backoff", "0.5", *extra))


def start_gitea_stack(root: Path, gitea: Gitea, *extra: str, org: str = ORG,
                      token: str | None = None) -> GiteaStack:
    """Config Store, then the Cluster Manager on ``gitea`` (its admin token unless
    ``token``), each on a free port; those started are stopped if a later one fails."""
    store = ServiceProcess(root / "cs").start()
    try:
        manager = manager_process(root / "cm", store.url, gitea, token or gitea.token, *extra,
                                  org=org).start()
    except BaseException:
        store.stop()
        raise
    return GiteaStack(root, store, manager, gitea, org)
