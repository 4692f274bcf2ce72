"""An edge's Edge Sync principal reaches only its own cluster's status entry."""

from __future__ import annotations

from dataclasses import replace

from fplus.config_store.client import ConfigStoreClient, Forbidden
from tests.edge_sync.conftest import StartAgent
from tests.edge_sync.helpers import STATUS, Edge, make_edge, status, wait_for


def test_an_agent_with_another_clusters_credentials_is_refused(
        cs_admin: ConfigStoreClient, edge: Edge, start_agent: StartAgent) -> None:
    """Cluster B's agent pointed at cluster A: every write is refused, A stays untouched."""
    intruder = make_edge(cs_admin)
    agent = start_agent(replace(intruder, uuid=edge.uuid))  # B's principal, A's uuid
    wait_for(lambda: agent.reporter.failures >= 2, what="refused writes")
    assert "403" in (agent.reporter.last_error or "")
    assert status(cs_admin, edge) == {}
    assert all(thread.is_alive() for thread in agent._threads)

    with ConfigStoreClient(cs_admin.base_url, intruder.username, intruder.password) as cs:
        try:
            cs.get_config(STATUS, edge.uuid)
        except Forbidden:
            pass
        else:
            raise AssertionError("B may read A's status entry")


def test_an_agent_writes_its_own_clusters_entry(
        cs_admin: ConfigStoreClient, edge: Edge, start_agent: StartAgent) -> None:
    agent = start_agent(edge)
    wait_for(lambda: status(cs_admin, edge).get("lastSeen"), what="a heartbeat")
    assert agent.reporter.failures == 0
