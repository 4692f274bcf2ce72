"""The HTTP API tests' fixtures, all of the session: the session's stack (Config Store, Git
server, Cluster Manager) and what is made on it once. Session rather than package scope: under
pytest-xdist a worker may leave this package and come back, and would set them up again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.config_store import uuids
from harness.certs import make_cert
from harness.servers import Api
from harness.stack import Stack, create_cluster, status, wait_for
from tests.conftest import grant, make_user

EDGE = uuids.App.EdgeClusterStatus


@dataclass
class Cluster:
    """A commissioned cluster, and the private key of its (simulated) sealing controller."""

    uuid: str
    name: str
    key: rsa.RSAPrivateKey


@pytest.fixture(scope="session")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack (the API tests only add and look at clusters of their own)."""
    return shared_stack


@pytest.fixture(scope="session")
def sealing_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="session")
def manager(stack: Stack) -> Api:
    """Unauthenticated session against the Cluster Manager."""
    return Api(stack.manager.url)


@pytest.fixture(scope="session")
def root(stack: Stack) -> Api:
    """The Cluster Manager as the root admin."""
    return Api(stack.manager.url, stack.admin.auth)


def commission(stack: Stack, name: str) -> str:
    """A new cluster entry, waited for until ready."""
    cluster = create_cluster(stack.admin, name)
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what=f"{name} ready")
    return cluster


def report_edge(stack: Stack, cluster: str, **fields: object) -> None:
    """Write the Edge cluster status as Edge Sync would (merge-patch)."""
    r = stack.admin.patch(f"/v2/app/{EDGE}/object/{cluster}", json=fields,
                          headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 204, r.text


@pytest.fixture(scope="session")
def bootstrapped(stack: Stack, sealing_key: rsa.RSAPrivateKey) -> Cluster:
    """A ready cluster whose Edge Sync reported a sealing certificate."""
    cluster = commission(stack, "api-edge")
    report_edge(stack, cluster, kubeseal_cert=make_cert(sealing_key))
    return Cluster(cluster, "api-edge", sealing_key)


@pytest.fixture(scope="module")
def user_with(stack: Stack) -> Callable[..., Api]:
    """``user_with((permission, target), ...)``: a new principal holding those grants, as a
    session against the Cluster Manager."""
    def make(*grants: tuple[str, str]) -> Api:
        uid, session = make_user(stack.admin)
        for permission, target in grants:
            grant(stack.admin, uid, permission, target)
        return Api(stack.manager.url, session.auth)
    return make
