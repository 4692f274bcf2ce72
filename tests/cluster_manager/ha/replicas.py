"""Several ``cluster-manager serve`` replicas on one Config Store, one Git server and one
database, as real processes.

The first replica is seeded (its ``seed`` step writes the principal's password file); the
others log in with that same file (``FPLUS_PASSWORD_FILE``), as replicas sharing one secret do.
Short lease timings keep the tests quick; the defaults are 10 / 2.5 / 2 s.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fplus.cluster_manager.reconcile.manager_account import password_file
from harness.servers import (
    ADMIN_PASSWORD,
    Api,
    ServiceProcess,
    cluster_manager_process,
    free_port,
    git_server_process,
)
from harness.stack import Stack

LEASE = ("--lease-duration", "3", "--lease-renew", "1", "--lease-retry", "0.5")
EDGE_FACING = "http://cluster-manager.replicas.test:8700"
"""The one address every replica gives edges (a load balancer's, in production): a cluster's
repo renders the same whichever replica leads. No edge connects in these tests."""


@dataclass
class Replicas:
    """The services and the replicas (``stack.manager`` is the first replica)."""

    stack: Stack
    replicas: list[ServiceProcess]
    seeded: ServiceProcess
    """The first replica as started (its data dir holds the password file)."""

    def health(self, replica: ServiceProcess) -> tuple[int, dict[str, Any]]:
        """``/healthz``: its status code and body (0 and {} when it does not answer)."""
        try:
            r = Api(replica.url).get("/healthz", timeout=5)
        except OSError:
            return 0, {}
        return r.status_code, r.json()

    def roles(self) -> list[str | None]:
        """Each replica's role as its ``/healthz`` says (None: not answering)."""
        return [self.health(r)[1].get("role") for r in self.replicas]

    def leader(self) -> ServiceProcess | None:
        """The one replica that says it leads, if exactly one does."""
        leading = [r for r, role in zip(self.replicas, self.roles(), strict=True)
                   if role == "leader"]
        return leading[0] if len(leading) == 1 else None

    def root(self, replica: ServiceProcess) -> Api:
        """The replica's API as the root administrator."""
        return Api(replica.url, ("admin", ADMIN_PASSWORD))

    def replace(self, gone: ServiceProcess) -> ServiceProcess:
        """A new replica (own data dir and port, the same settings) in place of ``gone``."""
        fresh = _another(self.seeded).start()
        self.replicas[self.replicas.index(gone)] = fresh
        return fresh

    def stop(self) -> None:
        for replica in self.replicas:
            replica.stop()
        self.stack.git.stop()
        self.stack.store.stop()


def _another(first: ServiceProcess) -> ServiceProcess:
    """A replica like ``first`` (seeded), with its own data dir and port, logging in with
    ``first``'s password file."""
    return dataclasses.replace(
        first, data_dir=first.data_dir.with_name(f"cm-{free_port()}"), port=free_port(),
        proc=None, seed_from=None,
        settings={"FPLUS_PASSWORD_FILE": str(password_file(first.data_dir))})


def start_replicas(root: Path, database: str, count: int = 2, *extra: str) -> Replicas:
    """The Config Store, the Git server and ``count`` replicas electing through the lease in
    ``database``; the first started first (so it leads)."""
    store = ServiceProcess(root / "cs").start()
    git = git_server_process(root / "git", store.url).start()
    args = ("--database", database, "--leader-election", "database", *LEASE,
            "--edge-cluster-manager", EDGE_FACING, *extra)
    first = cluster_manager_process(root / "cm-0", store.url, git.url, root / "git" / "repos",
                                    *args).start()
    running = Replicas(Stack(root, store, git, first), [first], dataclasses.replace(first))
    try:
        for _ in range(1, count):
            running.replicas.append(_another(first).start())
    except Exception:
        running.stop()
        raise
    return running
