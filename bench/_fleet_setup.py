"""The fleet benchmark's set-up: Edge cluster objects, the edges' principals and grants,
and the Node objects each simulated edge reports."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fplus.cluster_manager.reconcile.seeding import seed
from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.edge_sync.hosts import hosts
from harness.kube import node

STATUS = uuids.App.EdgeClusterStatus


def owner(i: int, workers: int, principals: int) -> int:
    """The principal edge ``i`` (run by worker ``i % workers``) writes as.

    Chosen so each principal's client serves as few workers as possible: its keep-alive
    pool then holds few connections (about ``max(workers, principals)`` in all, not
    ``workers * principals``). With ``principals`` a multiple of ``workers``, one each.
    """
    return i % principals if principals >= workers else (i % workers) % principals


def setup_fleet(admin: ConfigStoreClient, n: int, principals: int, workers: int,
           threads: int) -> tuple[list[str], list[tuple[str, str]]]:
    """N Edge cluster objects, P principals in the Edge Sync group and 2N object-restricted
    grants. One principal per edge: each created with its group and grants in one request
    and given a generated password; fewer: argon2 passwords, grants added one by one."""
    sync_group = seed(admin)["group"]["sync"]["uuid"]
    clusters = [str(uuid.uuid4()) for _ in range(n)]
    for start in range(0, n, 2000):
        chunk = clusters[start:start + 2000]
        admin.load_dump({"service": uuids.Service.ConfigDB, "version": 2, "objects": {
            uuids.Class.EdgeCluster: {c: {"name": f"edge-{c[:8]}"} for c in chunk}}})

    def status_grants(cluster: str) -> list[dict[str, Any]]:
        return [{"permission": perm, "target": STATUS, "object": cluster}
                for perm in (uuids.ConfigDBPerm.ReadApp, uuids.ConfigDBPerm.WriteApp)]

    if principals == n:
        def own(i: int) -> tuple[str, str]:
            name = f"op1sync/fleet-{i}"
            principal = admin.create_principal(name, klass=uuids.Class.EdgeAccount,
                                               groups=[sync_group],
                                               grants=status_grants(clusters[i]))
            return name, admin.generate_password(principal)

        with ThreadPoolExecutor(threads) as pool:
            return clusters, list(pool.map(own, range(n)))
    creds = []
    for i in range(principals):
        name, password = f"op1sync/fleet-{i}", f"fleet-password-{i}"
        admin.create_principal(name, password, klass=uuids.Class.EdgeAccount,
                               groups=[sync_group])
        creds.append((name, password))
    ids = [admin.find_principal(name) for name, _ in creds]

    def grant(i: int) -> None:
        for g in status_grants(clusters[i]):
            admin.add_grant(ids[owner(i, workers, principals)], g["permission"], STATUS, False,
                            clusters[i])

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(grant, range(n)))
    return clusters, creds


def fake_hosts(i: int) -> list[dict[str, Any]]:
    nodes = [node(f"edge-{i}-{j}", control_plane=j == 0, arch="arm64" if i % 3 else "amd64")
             for j in range(1 + i % 3)]
    return hosts(nodes)


