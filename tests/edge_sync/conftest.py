"""Fixtures for Edge Sync: a seeded Config Store, edge principals, the Kubernetes emulator."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from kubernetes import client

from fplus.cluster_manager.reconcile.seeding import seed
from fplus.config_store.client import ConfigStoreClient
from fplus.edge_sync.agent import Agent
from fplus.edge_sync.kube import Kube
from fplus.edge_sync.settings import config_store_client, from_env
from harness.servers import ADMIN_PASSWORD, ConfigStoreProcess
from tests.edge_sync.emulator import KubeHarness
from tests.edge_sync.helpers import NAMESPACE, Edge, agent_env, make_edge

StartAgent = Callable[..., Agent]


@pytest.fixture(scope="session")
def edge_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConfigStoreProcess]:
    """A Config Store of Edge Sync's own, seeded as the Cluster Manager seeds it."""
    server = ConfigStoreProcess(tmp_path_factory.mktemp("edge-cs") / "data").start()
    with ConfigStoreClient(server.url, "admin", ADMIN_PASSWORD) as cs:
        seed(cs)
    yield server
    server.stop()


@pytest.fixture
def cs_admin(edge_store: ConfigStoreProcess) -> Iterator[ConfigStoreClient]:
    with ConfigStoreClient(edge_store.url, "admin", ADMIN_PASSWORD) as cs:
        yield cs


@pytest.fixture
def edge(cs_admin: ConfigStoreClient) -> Edge:
    """A fresh edge cluster with its Edge Sync principal (as the Cluster Manager makes it)."""
    return make_edge(cs_admin)


@pytest.fixture
def kube() -> Iterator[KubeHarness]:
    harness = KubeHarness()
    yield harness
    harness.close()


def api_client(url: str) -> client.ApiClient:
    cfg = client.Configuration()
    cfg.host = url
    return client.ApiClient(cfg)


@pytest.fixture
def start_agent(edge_store: ConfigStoreProcess, kube: KubeHarness) -> Iterator[StartAgent]:
    """``start_agent(edge, store_url=None, **env)``: an in-process agent on the emulator."""
    running: list[tuple[Agent, ConfigStoreClient]] = []

    def start(edge: Edge, store_url: str | None = None, **env: str) -> Agent:
        settings = from_env(agent_env(edge, store_url or edge_store.url, **env))
        cs = config_store_client(settings, retries=1, backoff=0.05, timeout=5)
        agent = Agent(settings, cs, Kube(api_client(kube.url), timeout=5), NAMESPACE,
                      reconnect_delay=(0.2, 0.4))
        running.append((agent, cs))
        return agent.start()

    yield start
    for agent, cs in running:
        agent.stop(timeout=5)
        cs.close()


def pytest_configure(config: pytest.Config) -> None:
    # kmock 0.8 loads its bundled discovery with a deprecated importlib call
    config.addinivalue_line(
        "filterwarnings", "ignore:read_binary is deprecated:DeprecationWarning")
