"""The agent reports the Secrets the edge's Pods reference (``secretRefs``), against the
emulator and a real Config Store.

kmock runs no controllers (and no scheduler): the tests create Pod objects directly, as a
ReplicaSet controller would. The one emulator gap patched for this is list pagination
(``limit`` / ``continue``, addition 6 in tests/edge_sync/emulator.py): kmock ignores both,
and Edge Sync lists Pods a page at a time.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from kubernetes import client

from fplus.config_store.client import ConfigStoreClient, Unprocessable
from fplus.edge_sync.flux_watch import ReadinessWatcher
from fplus.edge_sync.kube import Kube
from tests.edge_sync.conftest import StartAgent, api_client
from tests.edge_sync.emulator import KubeHarness
from tests.edge_sync.helpers import NAMESPACE, STATUS, Edge, status, wait_for

PODS = "v1/pods"
KUBE_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def create_pod(kube: KubeHarness, namespace: str, name: str, **spec: Any) -> None:
    """A Pod through the API (as a workload controller would create it)."""
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "app:1"}], **spec}}
    client.CoreV1Api(kube.api()).create_namespaced_pod(namespace, body, _preload_content=False)


def delete_pod(kube: KubeHarness, namespace: str, name: str) -> None:
    client.CoreV1Api(kube.api()).delete_namespaced_pod(name, namespace, _preload_content=False)


def secret_refs(cs: ConfigStoreClient, edge: Edge) -> dict[str, Any]:
    return status(cs, edge).get("secretRefs") or {}


def secrets_listed(cs: ConfigStoreClient, edge: Edge) -> list[str] | None:
    return secret_refs(cs, edge).get("secrets")


def test_references_reach_the_status_entry_and_follow_the_pods(
        cs_admin: ConfigStoreClient, edge: Edge, kube: KubeHarness,
        start_agent: StartAgent) -> None:
    # factory: a volume and an image pull secret; line-1: an env secretKeyRef
    create_pod(kube, "factory", "historian-0",
               volumes=[{"name": "db", "secret": {"secretName": "db-credentials"}}],
               imagePullSecrets=[{"name": "registry"}])
    create_pod(kube, "factory", "reporter-0", containers=[{
        "name": "app", "image": "app:1", "envFrom": [{"secretRef": {"name": "db-credentials"}}]}])
    create_pod(kube, "line-1", "edge-agent-0", containers=[{
        "name": "agent", "image": "agent:1", "env": [{"name": "MQTT_PASSWORD", "valueFrom": {
            "secretKeyRef": {"name": "mqtt", "key": "password"}}}]}])
    start_agent(edge, FLUX_INTERVAL="0.2")
    expected = ["factory/db-credentials", "factory/registry", "line-1/mqtt"]
    wait_for(lambda: secrets_listed(cs_admin, edge) == expected, what="the three references")
    refs = secret_refs(cs_admin, edge)
    assert refs["truncated"] is False and "error" not in refs  # null: removed by the patch
    assert KUBE_TIME.match(refs["at"])
    assert "flux" in status(cs_admin, edge)  # the same pass, the same write

    # the historian goes: its pull secret is no longer referenced; the reporter still uses
    # db-credentials
    delete_pod(kube, "factory", "historian-0")
    wait_for(lambda: secrets_listed(cs_admin, edge) == ["factory/db-credentials",
                                                        "line-1/mqtt"],
             what="the pull secret gone")
    delete_pod(kube, "factory", "reporter-0")
    wait_for(lambda: secrets_listed(cs_admin, edge) == ["line-1/mqtt"], what="only mqtt left")

    # a new pod in a third namespace, through a projected volume
    create_pod(kube, "line-2", "opcua-0", volumes=[{"name": "tls", "projected": {
        "sources": [{"secret": {"name": "opcua-tls"}}]}}])
    wait_for(lambda: secrets_listed(cs_admin, edge) == ["line-1/mqtt", "line-2/opcua-tls"],
             what="the projected secret")


def test_pods_that_cannot_be_listed_are_unknown_not_none(
        cs_admin: ConfigStoreClient, edge: Edge, kube: KubeHarness,
        start_agent: StartAgent) -> None:
    create_pod(kube, "factory", "historian-0", imagePullSecrets=[{"name": "registry"}])
    start_agent(edge, FLUX_INTERVAL="0.2")
    wait_for(lambda: secrets_listed(cs_admin, edge) == ["factory/registry"], what="the list")

    kube.emulator.failing[("GET", PODS)] = 403  # e.g. an older bundle's ClusterRole
    refs = wait_for(lambda: secret_refs(cs_admin, edge) if "error" in secret_refs(
        cs_admin, edge) else None, what="the error")
    assert refs["error"] == "listing Pods: Kubernetes API answered 403 Forbidden"
    assert "secrets" not in refs  # unknown: the earlier list is removed, not kept
    assert "flux" in status(cs_admin, edge)  # the flux report goes on

    del kube.emulator.failing[("GET", PODS)]
    wait_for(lambda: secrets_listed(cs_admin, edge) == ["factory/registry"]
             and "error" not in secret_refs(cs_admin, edge), what="the list again")


def test_pods_are_listed_a_page_at_a_time(kube: KubeHarness) -> None:
    for i in range(5):
        create_pod(kube, f"ns-{i % 2}", f"pod-{i}", imagePullSecrets=[{"name": f"s-{i}"}])
    pods = list(Kube(api_client(kube.url), timeout=5).list_pods(page=2))
    assert sorted(p["metadata"]["name"] for p in pods) == [f"pod-{i}" for i in range(5)]
    pages = kube.requests("/api/v1/pods")
    assert len(pages) == 3
    assert all("limit=2" in str(r.url.query_string) for r in pages)
    assert [r.params.get("continue") for r in pages] == [None, "2", "4"]


def test_unchanged_references_are_handed_on_again_only_when_old(kube: KubeHarness) -> None:
    """A newer ``at`` alone is not worth a write every pass; every ``refresh`` seconds it is."""
    sent: list[dict[str, Any]] = []
    clock = [0.0]
    times = iter(f"2026-11-25T10:00:{s:02}Z" for s in range(60))
    watcher = ReadinessWatcher(Kube(api_client(kube.url), timeout=5), NAMESPACE,
                               lambda _flux, _applied, refs: sent.append(refs), refresh=60,
                               now=lambda: next(times), clock=lambda: clock[0])

    def one_pass(seconds: float) -> None:
        clock[0] += seconds
        watcher.publish(*watcher.collect(), watcher.secret_refs())

    one_pass(0)
    one_pass(10)  # nothing changed: nothing handed on
    assert [(r["secrets"], r["at"]) for r in sent] == [([], "2026-11-25T10:00:00Z")]
    create_pod(kube, "factory", "p", imagePullSecrets=[{"name": "registry"}])
    one_pass(10)  # changed: at once
    one_pass(59)  # 59 s after the last one handed on: not yet
    one_pass(1)  # 60 s: again, with a newer `at`
    assert [(r["secrets"], r["at"]) for r in sent] == [
        ([], "2026-11-25T10:00:00Z"), (["factory/registry"], "2026-11-25T10:00:02Z"),
        (["factory/registry"], "2026-11-25T10:00:04Z")]


@pytest.mark.parametrize(("what", "refs"), [
    ("more references than allowed", {"secrets": [f"ns/s-{i}" for i in range(5001)],
                                      "at": "2026-11-25T10:00:00Z"}),
    ("a reference longer than allowed", {"secrets": ["n" * 63 + "/" + "s" * 254],
                                         "at": "2026-11-25T10:00:00Z"}),
    ("no time", {"secrets": []}),
])
def test_the_config_store_refuses_reports_beyond_the_schema(
        cs_admin: ConfigStoreClient, edge: Edge, what: str, refs: dict[str, Any]) -> None:
    with pytest.raises(Unprocessable):
        cs_admin.patch_config(STATUS, edge.uuid, {"secretRefs": refs})
    assert "secretRefs" not in status(cs_admin, edge), what
