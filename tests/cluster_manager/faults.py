"""Helpers for the scale and fault-injection tests of the Cluster Manager.

Bulk calls over the admin API (a small pool of threads, one session each), cheap polling
through the v1 search (one request for every entry of an app), and the invariants a
converged Cluster Manager must hold: one principal per role and cluster, each with exactly
its expected grants; the setup status pointing at those principals; a repo whose self-link
matches the spec; ``git fsck --strict`` clean.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import yaml

from fplus.config_store import uuids
from fplus.git.repo import read_file
from harness.gitcli import fsck_clean
from harness.servers import Api, ThreadSessions
from harness.stack import CONFIG, STATUS, Stack

T = TypeVar("T")
R = TypeVar("R")

ROLES = {"flux": "op1flux", "sync": "op1sync"}  # role (setup status key) -> name prefix
Grant = tuple[str, str, bool, str | None]  # permission, target, plural, object


class AdminPool(ThreadSessions):
    """Admin sessions against the Config Store, one per worker thread."""

    def __init__(self, stack: Stack, workers: int = 8) -> None:
        super().__init__(stack.store.url)
        self.workers = workers

    def map(self, fn: Callable[[Api, T], R], items: Iterable[T]) -> list[R]:
        """``fn(session, item)`` for every item, on the pool; results in order."""
        with ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(lambda item: fn(self.api, item), items))


def poll(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.5,
         detail: Callable[[], Any] | None = None) -> Any:
    """Call ``check`` every ``interval`` seconds until it returns something truthy.

    On time-out the assertion names ``what`` and, if given, what ``detail()`` says is left.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            left = f"; left: {detail()}" if detail else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{left}")
        time.sleep(interval)


# -- bulk admin calls ------------------------------------------------------------------------
def _create(admin: Api, name: str, namespace: str) -> str:
    r = admin.post("/v2/object", json={"class": uuids.Class.EdgeCluster})
    assert r.status_code == 201, r.text
    cluster = r.json()["uuid"]
    set_config(admin, cluster, name, namespace)
    return cluster


def create_clusters(pool: AdminPool, names: Iterable[str],
                    namespace: str = "fplus-edge") -> dict[str, str]:
    """Edge cluster objects with their configuration entries: ``{uuid: name}``."""
    names = list(names)
    made = pool.map(lambda admin, name: _create(admin, name, namespace), names)
    return dict(zip(made, names, strict=True))


def set_config(admin: Api, cluster: str, name: str, namespace: str) -> None:
    """Write (create or replace) a cluster's configuration entry."""
    r = admin.put(f"/v2/app/{CONFIG}/object/{cluster}",
                  json={"name": name, "namespace": namespace})
    assert r.status_code in (201, 204), r.text


def delete_config(admin: Api, cluster: str) -> None:
    """Delete a cluster's configuration entry."""
    r = admin.delete(f"/v2/app/{CONFIG}/object/{cluster}")
    assert r.status_code == 204, r.text


def config_with_etag(admin: Api, cluster: str) -> tuple[dict[str, Any], str]:
    """A configuration entry and its ETag, unquoted as the manager records it."""
    r = admin.get(f"/v2/app/{CONFIG}/object/{cluster}")
    assert r.status_code == 200, r.text
    return r.json(), r.headers["ETag"].removeprefix("W/").strip('"')


# -- reading state in one request per app ------------------------------------------------------
def search(admin: Api, app: str, where: dict[str, str] | None = None,
           **select: str) -> Any:
    """The v1 search: uuids matching ``where``, or ``{uuid: {key: value}}`` with selections."""
    params = {**(where or {}), **{f"@{key}": path for key, path in select.items()}}
    r = admin.get(f"/v1/app/{app}/search", params=params, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def ready_clusters(admin: Api) -> set[str]:
    """Clusters whose setup status says ``ready: true``."""
    return set(search(admin, STATUS, {"ready": "true"}))


def entries(admin: Api, app: str) -> set[str]:
    """Objects with an entry in ``app``."""
    r = admin.get(f"/v2/app/{app}/object", timeout=30)
    assert r.status_code == 200, r.text
    return set(r.json())


def members(admin: Api, klass: str) -> set[str]:
    """Members of a class."""
    r = admin.get(f"/v2/class/{klass}/member", timeout=30)
    assert r.status_code == 200, r.text
    return set(r.json())


def service_groups(admin: Api) -> dict[str, str]:
    """The Cluster Manager's groups from its ServiceConfig: ``{"cluster"|"flux"|"sync": uuid}``."""
    r = admin.get(f"/v2/app/{uuids.App.ServiceConfig}/object/{uuids.Service.Clusters}")
    assert r.status_code == 200, r.text
    return {key: group["uuid"] for key, group in r.json()["group"].items()}


def edge_principals(admin: Api) -> dict[str, list[str]]:
    """Every ``op1flux/…`` and ``op1sync/…`` principal: ``{name: [uuid, …]}``."""
    r = admin.get("/v2/principal?detail=true", timeout=30)
    assert r.status_code == 200, r.text
    found: dict[str, list[str]] = {}
    for principal in r.json():
        if principal["name"].split("/", 1)[0] in ROLES.values():
            found.setdefault(principal["name"], []).append(principal["uuid"])
    return found


def principal_names(name: str) -> dict[str, str]:
    """A cluster's principal names by role."""
    return {role: f"{prefix}/{name}" for role, prefix in ROLES.items()}


# -- invariants ------------------------------------------------------------------------------
def expected_grants(role: str, cluster: str) -> Counter[Grant]:
    """Flux pulls its own repo; Edge Sync reads and writes its own Edge cluster status entry
    and reads its own cluster's Edge deployments (those whose ``cluster`` names it), nothing
    else."""
    if role == "flux":
        return Counter([(uuids.GitPerm.Pull, cluster, False, None)])
    status = uuids.App.EdgeClusterStatus
    return Counter([(uuids.ConfigDBPerm.ReadApp, status, False, cluster),
                    (uuids.ConfigDBPerm.WriteApp, status, False, cluster),
                    (uuids.ConfigDBPerm.ReadApp, uuids.App.EdgeDeployment, False, cluster)])


def grants_of(admin: Api, principal: str) -> Counter[Grant]:
    """The principal's grants as a multiset (a duplicate counts twice)."""
    r = admin.post("/v2/grant/find", json={"principal": principal})
    assert r.status_code == 200, r.text
    found: Counter[Grant] = Counter()
    for grant in r.json():
        g = admin.get(f"/v2/grant/{grant}")
        assert g.status_code == 200, g.text
        body = g.json()
        found[(body["permission"], body["target"], body["plural"], body.get("object"))] += 1
    return found


def check_accounts(pool: AdminPool, clusters: dict[str, str],
                   principals: dict[str, list[str]]) -> dict[str, dict[str, str]]:
    """Each cluster has one principal per role with exactly its grants.

    Returns ``{cluster: {role: principal uuid}}``; raises listing (a few of) the problems.
    """
    problems: list[str] = []
    accounts: dict[str, dict[str, str]] = {}
    wanted: list[tuple[str, str, str]] = []  # cluster, role, principal
    for cluster, name in clusters.items():
        for role, pname in principal_names(name).items():
            held = principals.get(pname, [])
            if len(held) != 1:
                problems.append(f"{pname}: {len(held)} principals")
                continue
            accounts.setdefault(cluster, {})[role] = held[0]
            wanted.append((cluster, role, held[0]))
    found = pool.map(lambda admin, item: grants_of(admin, item[2]), wanted)
    for (cluster, role, principal), grants in zip(wanted, found, strict=True):
        if grants != expected_grants(role, cluster):
            problems.append(f"{clusters[cluster]} {role} {principal}: grants {dict(grants)}")
    assert not problems, f"{len(problems)} account problems, e.g. {problems[:5]}"
    return accounts


def check_status_points_at(admin: Api, accounts: dict[str, dict[str, str]]) -> None:
    """The setup status records the principals found by name, both steps done."""
    recorded = search(admin, STATUS, flux="flux.uuid", sync="sync.uuid",
                      fluxDone="flux.done", syncDone="sync.done")
    wrong = {c: recorded.get(c) for c, held in accounts.items()
             if recorded.get(c) != {**held, "fluxDone": True, "syncDone": True}}
    assert not wrong, f"{len(wrong)} statuses disagree with the principals, e.g. " \
                      f"{list(wrong.items())[:3]}"


def repo_path(stack: Stack, cluster: str) -> Path:
    """Where the Git server keeps a cluster's repo."""
    return stack.repos / f"{cluster}.git"


def self_link(stack: Stack, cluster: str) -> list[dict[str, Any]]:
    """The documents of ``edo/cluster/self-link.yaml`` in the cluster's repo (none: [])."""
    text = read_file(repo_path(stack, cluster), "edo/cluster/self-link.yaml")
    return list(yaml.safe_load_all(text)) if text else []


def check_self_link(stack: Stack, cluster: str, namespace: str) -> str | None:
    """What is wrong with the cluster's self-link in its repo, or None."""
    docs = self_link(stack, cluster)
    if [d.get("kind") for d in docs] != ["GitRepository", "Kustomization"]:
        return f"{cluster}: self-link kinds {[d.get('kind') for d in docs]}"
    if any(d["metadata"]["namespace"] != namespace for d in docs):
        return f"{cluster}: self-link not in namespace {namespace}"
    if cluster not in docs[0]["spec"]["url"]:
        return f"{cluster}: self-link url {docs[0]['spec']['url']}"
    return None


def stored_repos(stack: Stack) -> Iterator[Path]:
    """Every repo in the Git server's repos directory (not creation scratch directories)."""
    return (p for p in sorted(stack.repos.glob("*.git")) if not p.name.startswith("."))


def fsck_all(repos: Iterable[Path]) -> int:
    """``git fsck --strict`` every repo; returns how many were checked."""
    checked = 0
    for repo in repos:
        fsck_clean(repo)
        checked += 1
    return checked
