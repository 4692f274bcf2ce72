"""Outages and failures: the agent keeps running and catches up."""

from __future__ import annotations

import signal
import time

from kubernetes import client

from fplus.cluster_manager.reconcile.seeding import seed
from fplus.config_store.client import ConfigStoreClient
from harness.kube import node
from harness.servers import ADMIN_PASSWORD, ConfigStoreProcess
from tests.edge_sync.conftest import StartAgent
from tests.edge_sync.emulator import HELM_RELEASES, KubeHarness
from tests.edge_sync.helpers import (
    NAMESPACE,
    chart_template,
    deployment,
    make_edge,
    status,
    wait_for,
)


def _hostnames(cs: ConfigStoreClient, edge) -> list[str]:
    return [h["hostname"] for h in status(cs, edge).get("hosts") or []]


def test_kubernetes_api_outage_is_survived(
        cs_admin: ConfigStoreClient, kube: KubeHarness, start_agent: StartAgent) -> None:
    edge = make_edge(cs_admin)
    core = client.CoreV1Api(kube.api())
    core.create_node(node("edge-1"))
    chart = chart_template(cs_admin)
    first = deployment(cs_admin, edge, chart, name="first")
    agent = start_agent(edge)
    wait_for(lambda: f"edge-agent-{first}" in kube.objects(HELM_RELEASES, NAMESPACE),
             what="the first release")

    with kube.outage():
        core.create_node(node("edge-2"))  # straight to the emulator, unseen by the agent
        second = deployment(cs_admin, edge, chart, name="second")
        wait_for(lambda: "unreachable" in (status(cs_admin, edge).get("deployments") or {})
                 .get("error", ""), what="the apply failure reported")
        assert _hostnames(cs_admin, edge) == ["edge-1"]

    wait_for(lambda: _hostnames(cs_admin, edge) == ["edge-1", "edge-2"], what="edge-2")
    wait_for(lambda: f"edge-agent-{second}" in kube.objects(HELM_RELEASES, NAMESPACE),
             what="the second release")
    wait_for(lambda: "error" not in status(cs_admin, edge)["deployments"],
             what="the error cleared")
    assert all(thread.is_alive() for thread in agent._threads)


def test_failed_applies_are_retried(cs_admin: ConfigStoreClient, kube: KubeHarness,
                                    start_agent: StartAgent) -> None:
    edge = make_edge(cs_admin)
    kube.call(lambda: kube.emulator.failing.update({("PATCH", HELM_RELEASES): 500}))
    d = deployment(cs_admin, edge, chart_template(cs_admin))
    start_agent(edge)
    wait_for(lambda: "500" in (status(cs_admin, edge).get("deployments") or {})
             .get("error", ""), what="the failure reported")
    attempts = len(kube.requests(f"/helmreleases/edge-agent-{d}"))
    wait_for(lambda: len(kube.requests(f"/helmreleases/edge-agent-{d}")) > attempts,
             what="a retry")

    kube.call(kube.emulator.failing.clear)
    wait_for(lambda: f"edge-agent-{d}" in kube.objects(HELM_RELEASES, NAMESPACE),
             what="the release after the fault")
    wait_for(lambda: "error" not in status(cs_admin, edge)["deployments"],
             what="the error cleared")


def test_config_store_outage_is_survived(tmp_path, kube: KubeHarness,
                                         start_agent: StartAgent) -> None:
    store = ConfigStoreProcess(tmp_path / "cs").start()
    try:
        with ConfigStoreClient(store.url, "admin", ADMIN_PASSWORD) as cs:
            seed(cs)
            edge = make_edge(cs)
            core = client.CoreV1Api(kube.api())
            core.create_node(node("edge-1"))
            agent = start_agent(edge, store_url=store.url)
            wait_for(lambda: _hostnames(cs, edge) == ["edge-1"], what="hosts")

            store.stop()
            core.create_node(node("edge-2"))
            wait_for(lambda: agent.reporter.failures >= 2, what="failed writes")
            store.start()  # same port, same data

            wait_for(lambda: _hostnames(cs, edge) == ["edge-1", "edge-2"], timeout=30,
                     what="the pending hosts written after the outage")
            d = deployment(cs, edge, chart_template(cs))  # notify resubscribed?
            wait_for(lambda: f"edge-agent-{d}" in kube.objects(HELM_RELEASES, NAMESPACE),
                     timeout=30, what="a deployment made after the outage")
    finally:
        store.stop()


def _applies(kube: KubeHarness, release: str) -> int:
    """Server-side applies of one HelmRelease so far."""
    return sum(r.method == "PATCH" for r in kube.requests(f"/helmreleases/{release}"))


def test_a_config_store_restart_is_resumed_without_a_new_pass(
        tmp_path, kube: KubeHarness, start_agent: StartAgent) -> None:
    """The agent's three subscriptions are offered again with what they hold: answered
    unchanged, nothing is delivered, so nothing is rendered or applied again; a change made
    after is followed as before."""
    store = ConfigStoreProcess(tmp_path / "cs").start()
    try:
        with ConfigStoreClient(store.url, "admin", ADMIN_PASSWORD) as cs:
            seed(cs)
            edge = make_edge(cs)
            chart = chart_template(cs)
            first = deployment(cs, edge, chart, name="first")
            agent = start_agent(edge, store_url=store.url)
            wait_for(lambda: _applies(kube, f"edge-agent-{first}") > 0, what="the release")
            time.sleep(1.0)  # the passes the first answers started are over
            applied = _applies(kube, f"edge-agent-{first}")

            store.stop(signal.SIGKILL)
            wait_for(lambda: not agent.notify.connected, what="the agent to notice")
            store.start()  # same port, same data
            wait_for(lambda: agent.notify.resumed == 3, timeout=30, what="three resumed")
            time.sleep(1.0)  # a pass would start within its settle time (0.2 s)
            assert _applies(kube, f"edge-agent-{first}") == applied

            second = deployment(cs, edge, chart, name="second")
            wait_for(lambda: f"edge-agent-{second}" in kube.objects(HELM_RELEASES, NAMESPACE),
                     timeout=30, what="a deployment made after the restart")
    finally:
        store.stop()
