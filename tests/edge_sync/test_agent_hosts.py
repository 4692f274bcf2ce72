"""The agent against the emulator and a real Config Store: nodes → ``hosts``, heartbeat."""

from __future__ import annotations

import datetime as dt

from kubernetes import client

from fplus.config_store.client import ConfigStoreClient
from fplus.edge_sync import __version__
from harness.kube import node
from tests.edge_sync.conftest import StartAgent
from tests.edge_sync.emulator import KUSTOMIZATIONS, KubeHarness
from tests.edge_sync.helpers import NAMESPACE, Edge, status, wait_for


def _hostnames(cs: ConfigStoreClient, edge: Edge) -> list[str] | None:
    hosts = status(cs, edge).get("hosts")
    return None if hosts is None else [h["hostname"] for h in hosts]


def test_nodes_added_removed_and_not_ready_reach_hosts(
        cs_admin: ConfigStoreClient, edge: Edge, kube: KubeHarness,
        start_agent: StartAgent) -> None:
    core = client.CoreV1Api(kube.api())
    core.create_node(node("edge-1", control_plane=True, specialised="rpi"))
    start_agent(edge, WATCH_TIMEOUT="60")  # every change below must come from watch events

    hosts = wait_for(lambda: status(cs_admin, edge).get("hosts"), what="the first hosts")
    assert hosts == [{"hostname": "edge-1", "arch": "amd64", "k8s_version": "v1.30.4+k3s1",
                      "control_plane": True, "os_version": "Ubuntu 24.04 LTS", "ready": True,
                      "specialised": "rpi"}]

    core.create_node(node("edge-2", arch="arm64"))
    wait_for(lambda: _hostnames(cs_admin, edge) == ["edge-1", "edge-2"], what="edge-2 added")
    added = status(cs_admin, edge)["hosts"][1]
    assert added["arch"] == "arm64" and added["control_plane"] is False
    assert "specialised" not in added

    core.patch_node_status("edge-2", {"status": {"conditions": [
        {"type": "Ready", "status": "False"}]}})
    wait_for(lambda: status(cs_admin, edge)["hosts"][1]["ready"] is False,
             what="edge-2 NotReady")

    core.delete_node("edge-1")
    wait_for(lambda: _hostnames(cs_admin, edge) == ["edge-2"], what="edge-1 removed")


def test_heartbeat_reports_last_seen_and_version(
        cs_admin: ConfigStoreClient, edge: Edge, start_agent: StartAgent) -> None:
    start_agent(edge)
    first = wait_for(lambda: status(cs_admin, edge).get("lastSeen"), what="a heartbeat")
    assert status(cs_admin, edge)["version"] == __version__
    seen = dt.datetime.fromisoformat(first.replace("Z", "+00:00"))
    assert abs((dt.datetime.now(dt.UTC) - seen).total_seconds()) < 30
    wait_for(lambda: status(cs_admin, edge).get("lastSeen") != first, what="the next beat")


def test_the_watch_is_re_established(cs_admin: ConfigStoreClient, edge: Edge,
                                     kube: KubeHarness, start_agent: StartAgent) -> None:
    """The emulator never ends a watch: the client's idle timeout does, then it watches again."""
    start_agent(edge, WATCH_TIMEOUT="1")
    wait_for(lambda: len(kube.requests("watch=true")) >= 2, what="a second watch")
    client.CoreV1Api(kube.api()).create_node(node("late"))
    wait_for(lambda: _hostnames(cs_admin, edge) == ["late"], what="a node after re-watching")


def test_the_commit_flux_applied_is_reported(
        cs_admin: ConfigStoreClient, edge: Edge, kube: KubeHarness,
        start_agent: StartAgent) -> None:
    start_agent(edge, FLUX_INTERVAL="0.2")
    wait_for(lambda: status(cs_admin, edge).get("flux"), what="a Flux report")
    assert "appliedCommit" not in status(cs_admin, edge)  # no self-link Kustomization yet
    commit = "0123456789abcdef0123456789abcdef01234567"
    kube.put(KUSTOMIZATIONS, NAMESPACE, "self-link", {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "self-link", "namespace": NAMESPACE},
        "status": {"lastAppliedRevision": f"main@sha1:{commit}"}})
    wait_for(lambda: status(cs_admin, edge).get("appliedCommit") == commit,
             what="the applied commit")
    kube.emulator.failing[("GET", KUSTOMIZATIONS)] = 403  # listing and reading refused
    wait_for(lambda: "403" in (status(cs_admin, edge).get("flux") or {}).get("error", ""),
             what="the refusal reported")
    assert status(cs_admin, edge)["appliedCommit"] == commit  # a failed read is no change
