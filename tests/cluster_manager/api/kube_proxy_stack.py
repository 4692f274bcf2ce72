"""The Kubernetes proxy tests' stack and fixtures, shared by ``test_kube_proxy*.py``: two
Cluster Manager replicas sharing one SQLite database (with the Config Store and the Git
server), two commissioned clusters, and a stand-in edge for the first
(:mod:`tests.cluster_manager.tunnel_edge`).

Each module that imports these fixtures gets a stack of its own (module scope), started with
the ``SETTINGS`` it defines (its ``--tunnel-*`` bounds). Replica A (the first) holds the edges.
The fixtures' functions have names of their own (``name=`` gives the fixture's): a module
imports them without its tests' parameters redefining the imported names.

Fixtures: ``replicas``, ``a`` and ``b`` (the replicas), ``sites`` (kube-a and kube-b), ``site``
(kube-a), ``edge`` (kube-a's stand-in edge, on A), ``user`` (a factory of principals holding
grants), ``viewer`` (a principal with view on kube-a).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from fplus.config_store import uuids
from harness.servers import Api, ServiceProcess, stop_all
from harness.stack import Stack, create_cluster, status, wait_for
from tests.cluster_manager.ha.replicas import Replicas, start_replicas
from tests.cluster_manager.tunnel_edge import StandInEdge, edge_password, store_token
from tests.conftest import grant, make_user

NAMES = ("kube-a", "kube-b")


@dataclass
class Site:
    """A commissioned cluster and its Edge Sync principal's token."""

    uuid: str
    name: str
    token: str


@dataclass
class User:
    """A principal: its name, its credentials and a session on each replica."""

    name: str
    auth: tuple[str, str]
    a: Api
    b: Api


@pytest.fixture(scope="module", name="replicas")
def stack_replicas(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    """The module's stack: two replicas started with the module's ``SETTINGS``."""
    settings: tuple[str, ...] = tuple(getattr(request.module, "SETTINGS", ()))
    root = tmp_path_factory.mktemp("kube-proxy")
    running = start_replicas(root, f"sqlite:///{root / 'cm.sqlite'}", 2, *settings)
    yield running
    stop_all([*running.replicas, running.stack.git, running.stack.store])  # all at once


@pytest.fixture(scope="module", name="a")
def replica_a(replicas: Replicas) -> ServiceProcess:
    return replicas.replicas[0]


@pytest.fixture(scope="module", name="b")
def replica_b(replicas: Replicas) -> ServiceProcess:
    return replicas.replicas[1]


@pytest.fixture(scope="module", name="sites")
def commissioned(replicas: Replicas) -> dict[str, Site]:
    """Two clusters, commissioned together."""
    stack = replicas.stack
    made = {name: create_cluster(stack.admin, name) for name in NAMES}
    found = {}
    for name, cluster in made.items():
        wait_for(functools.partial(_ready, stack, cluster), 60, f"{name} ready")
        principal, password = edge_password(stack, cluster, name)
        found[name] = Site(cluster, name, store_token(stack.store.url, principal, password))
    return found


def _ready(stack: Stack, cluster: str) -> bool:
    return bool((status(stack.admin, cluster) or {}).get("ready"))


@pytest.fixture(scope="module", name="site")
def kube_a(sites: dict[str, Site]) -> Site:
    return sites["kube-a"]


@pytest.fixture(scope="module", name="edge")
def kube_a_edge(sites: dict[str, Site], site: Site, a: ServiceProcess) -> Iterator[StandInEdge]:
    """kube-a's edge, connected to replica A."""
    connected = StandInEdge(a.url, site.uuid, site.token)
    yield connected
    connected.drop()


@pytest.fixture(scope="module", name="user")
def new_user(replicas: Replicas, a: ServiceProcess,
         b: ServiceProcess) -> Callable[..., User]:
    """``user((permission, target), ...)``: a new principal holding those grants."""
    def make(*grants: tuple[str, str]) -> User:
        auth = (f"kube-{uuid.uuid4().hex[:10]}", "pw-kube-proxy")
        uid, _ = make_user(replicas.stack.admin, *auth)
        for permission, target in grants:
            grant(replicas.stack.admin, uid, permission, target)
        return User(auth[0], auth, Api(a.url, auth), Api(b.url, auth))
    return make


@pytest.fixture(scope="module", name="viewer")
def kube_a_viewer(user: Callable[..., User], site: Site) -> User:
    return user((uuids.EdgePerm.KubeView, site.uuid))


def kube(cluster: str, path: str) -> str:
    """The proxy's path for ``path`` of ``cluster``'s Kubernetes API."""
    return f"/v1/cluster/{cluster}/kube/{path.lstrip('/')}"


def tunnel_state(api: Api, cluster: str) -> dict[str, Any]:
    """The tunnel in both status views (which must agree)."""
    r = api.get(f"/v1/cluster/{cluster}")
    assert r.status_code == 200, r.text
    s = api.get(f"/v1/cluster/{cluster}/status")
    assert s.status_code == 200, s.text
    assert r.json()["tunnel"] == s.json()["tunnel"]
    return dict(r.json()["tunnel"])


def connected(api: Api, cluster: str) -> dict[str, Any]:
    """The tunnel's state once it reads connected (within 10 s)."""
    found: dict[str, Any] = wait_for(
        lambda: (s := tunnel_state(api, cluster))["state"] == "connected" and s, 10,
        f"{cluster}'s tunnel connected")
    return found


def audit_rows(root: Api, cluster: str, principal: str) -> list[dict[str, Any]]:
    r = root.get("/v1/audit", params={"cluster": cluster, "principal": principal})
    assert r.status_code == 200, r.text
    return list(r.json()["entries"])


def refused(r: Any, status: int, setting: str) -> None:
    """``r`` is a ``status`` refusal naming ``--setting``."""
    assert r.status_code == status, r.text
    assert r.json()["setting"] == setting, r.text
    assert f"--{setting}" in r.json()["error"], r.text
