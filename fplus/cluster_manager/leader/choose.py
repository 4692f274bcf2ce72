"""``--leader-election auto|kubernetes|database|off``: which lease, from the settings."""

from __future__ import annotations

from collections.abc import Callable

from ..db import Database
from ..settings import Settings
from .database_lease import DatabaseLease
from .elector import AlwaysLeader, LeaderElector, check_timings
from .lease import Lease

MODES = ("auto", "kubernetes", "database", "off")


def resolve_mode(mode: str, settings: Settings) -> str:
    """``auto``: ``kubernetes`` in a pod with a service account; else ``database`` when a
    database was named (``--database``: replicas may share it); else ``off`` (the data dir's
    private SQLite file is one replica's by construction, so a restart after a crash reconciles
    at once instead of waiting for its own lease to end)."""
    if mode != "auto":
        return mode
    from .kubernetes_lease import in_cluster

    if in_cluster():
        return "kubernetes"
    return "database" if settings.database_url else "off"


def make_lease(settings: Settings, db: Database) -> Lease | None:
    """The lease ``settings.leader_election`` asks for (None: election off); ValueError or the
    Kubernetes client's ConfigException when it cannot work."""
    mode = resolve_mode(settings.leader_election, settings)
    if mode == "off":
        return None
    check_timings(settings.lease_duration, settings.lease_renew, settings.lease_retry)
    if mode == "kubernetes":
        from .kubernetes_lease import KubernetesLease, api_client, pod_namespace

        return KubernetesLease(api_client(), settings.lease_namespace or pod_namespace(),
                               settings.lease_name, settings.lease_duration)
    return DatabaseLease(db, settings.lease_name, settings.lease_duration)


def make_elector(lease: Lease | None, settings: Settings, identity: str,
                 on_lead: Callable[[], None],
                 on_follow: Callable[[], None]) -> LeaderElector | AlwaysLeader:
    """The elector for ``lease`` from :func:`make_lease` (not started)."""
    if lease is None:
        return AlwaysLeader(identity, on_lead, on_follow)
    return LeaderElector(lease, identity, on_lead, on_follow, renew=settings.lease_renew,
                         retry=settings.lease_retry)


def in_turn(*steps: Callable[[], None]) -> Callable[[], None]:
    """One callback running ``steps`` in order (what leading starts, or following stops)."""
    def run() -> None:
        for step in steps:
            step()
    return run
