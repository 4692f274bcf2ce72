"""The fleet benchmark's set-up: Edge cluster objects, the edges' principals and grants,
and the Node objects each simulated edge reports."""

from __future__ import annotations

import secrets
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from argon2 import PasswordHasher, profiles

from fplus.cluster_manager.model.apps_and_roles import SYNC
from fplus.cluster_manager.reconcile.accounts import grants
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


PASSWORD_HASHES = "argon2id CHEAPEST, made by the bench and loaded by POST /load"
"""How the edges' throwaway principals get their passwords (said in the bench's JSON)."""
CHUNK = 1000
"""Edges per dump loaded (one transaction each; within the default 1 MiB body limit)."""


def setup_fleet(admin: ConfigStoreClient, n: int, principals: int, workers: int,
                threads: int) -> tuple[list[str], list[tuple[str, str]]]:
    """N Edge cluster objects, P principals in the Edge Sync group and 2N object-restricted
    grants. One principal per edge: all loaded as dumps (:func:`load_edges`); fewer: argon2
    passwords at the server's profile, grants added one by one."""
    sync_group = seed(admin)["group"]["sync"]["uuid"]
    if principals == n:
        return load_edges(admin, n, sync_group)
    clusters = [str(uuid.uuid4()) for _ in range(n)]
    for start in range(0, n, CHUNK):
        admin.load_dump({"service": uuids.Service.ConfigDB, "version": 2, "objects": {
            uuids.Class.EdgeCluster: {c: {"name": f"edge-{c[:8]}"}
                                    for c in clusters[start:start + CHUNK]}}})
    return clusters, _shared_principals(admin, clusters, principals, workers, threads,
                                        sync_group)


def load_edges(admin: ConfigStoreClient, n: int, sync_group: str
               ) -> tuple[list[str], list[tuple[str, str]]]:
    """N Edge cluster objects and N edge principals (``op1sync/fleet-<i>``, in the Edge Sync
    group, holding what the Cluster Manager grants an Edge Sync account:
    :func:`status_grants`), :data:`CHUNK` at a time through the public bulk route (``POST /load``:
    a ConfigDB dump of the objects, then an Auth dump of the principals with their password
    hashes and object grants). The passwords are random; their hashes are argon2id with
    argon2-cffi's CHEAPEST parameters (:data:`PASSWORD_HASHES`), so the bench's 50,000
    logins cost microseconds each: throwaway principals only."""
    hasher = PasswordHasher.from_parameters(profiles.CHEAPEST)
    clusters = [str(uuid.uuid4()) for _ in range(n)]
    ids = [str(uuid.uuid4()) for _ in range(n)]
    creds = [(f"op1sync/fleet-{i}", secrets.token_urlsafe(24)) for i in range(n)]
    for start in range(0, n, CHUNK):
        chunk = range(start, min(n, start + CHUNK))
        admin.load_dump({"service": uuids.Service.ConfigDB, "version": 2, "objects": {
            uuids.Class.EdgeCluster: {clusters[i]: {"name": f"edge-{i}"} for i in chunk},
            uuids.Class.EdgeAccount: {ids[i]: {"memberOf": [sync_group]} for i in chunk}}})
        admin.load_dump({
            "service": uuids.Service.Auth, "version": 2,
            "principals": {ids[i]: {"name": creds[i][0], "passwordHash": hasher.hash(creds[i][1])}
                           for i in chunk},
            "objectGrants": [{"principal": ids[i], **g}
                             for i in chunk for g in status_grants(clusters[i])]})
    return clusters, creds


def status_grants(cluster: str) -> list[dict[str, Any]]:
    """What the Cluster Manager grants the Edge Sync account of ``cluster``
    (:func:`fplus.cluster_manager.reconcile.accounts.grants`): ReadApp and WriteApp on its
    status entry, ReadApp on its own Edge deployments (without it, an edge's deployments
    subscription is refused and it never holds Edge Sync's subscriptions)."""
    return [{"permission": g["permission"], "target": g["target"], "plural": False,
             "object": g["object"]} for g in grants(SYNC, cluster)]


def _shared_principals(admin: ConfigStoreClient, clusters: list[str], principals: int,
                       workers: int, threads: int, sync_group: str) -> list[tuple[str, str]]:
    """P principals with argon2 passwords shared by the edges (see :func:`owner`)."""
    creds = []
    for i in range(principals):
        name, password = f"op1sync/fleet-{i}", f"fleet-password-{i}"
        admin.create_principal(name, password, klass=uuids.Class.EdgeAccount,
                               groups=[sync_group])
        creds.append((name, password))
    ids = [admin.find_principal(name) for name, _ in creds]

    def grant(i: int) -> None:
        for g in status_grants(clusters[i]):
            admin.add_grant(ids[owner(i, workers, principals)], g["permission"], g["target"],
                            False, clusters[i])

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(grant, range(len(clusters))))
    return creds


def fake_hosts(i: int) -> list[dict[str, Any]]:
    nodes = [node(f"edge-{i}-{j}", control_plane=j == 0, arch="arm64" if i % 3 else "amd64")
             for j in range(1 + i % 3)]
    return hosts(nodes)


