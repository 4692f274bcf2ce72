"""Edge Sync's agent opens its tunnel when CLUSTER_MANAGER_URL is set, with its own Config
Store token, and forwards through it to the Kubernetes API it already uses."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fplus.config_store.client import ConfigStoreClient
from fplus.tunnel import wire
from tests.edge_sync.conftest import StartAgent
from tests.edge_sync.helpers import Edge
from tests.edge_sync.tunnel.fake_manager import FakeManager

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def manager() -> Iterator[FakeManager]:
    server = FakeManager().start()
    yield server
    server.stop()


def test_the_agent_keeps_a_tunnel_as_its_edge_sync_principal(
        start_agent: StartAgent, edge: Edge, cs_admin: ConfigStoreClient,
        manager: FakeManager) -> None:
    agent = start_agent(edge, CLUSTER_MANAGER_URL=manager.url())
    mux = manager.next_mux(timeout=20)
    (handshake,) = manager.handshakes
    assert handshake.target == f"/v1/cluster/{edge.uuid}/tunnel"
    who = cs_admin.identify(handshake.headers["authorization"])
    assert who is not None and who["uuid"] == edge.principal

    stream = mux.open(wire.request_headers("GET", "/api/v1/nodes", [], level="view",
                                           principal="alice"), end=True)
    status, _ = stream.response(timeout=10)
    assert status == 200  # the Kubernetes API Edge Sync itself uses answered
    assert agent.tunnel is not None and agent.tunnel.connected.is_set()


def test_without_a_cluster_manager_url_there_is_no_tunnel(
        start_agent: StartAgent, edge: Edge) -> None:
    assert start_agent(edge).tunnel is None
