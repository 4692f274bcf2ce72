"""``sync`` end to end: a real Edge Sync agent on the Kubernetes emulator reports what Flux
applied, and the Cluster Manager's status, ``/metrics`` and secret listing follow it.

Nothing runs Flux's controllers or the Sealed Secrets controller in the emulator (kmock): the
test writes the objects' ``status`` as they would (conditions, applied revisions). Everything
else is real: the stack, the agent (in-process, with the cluster's own Edge Sync principal),
the Kubernetes client it lists with, and the Config Store entry it writes.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from fplus.cluster_manager.vocabulary import SYNC
from fplus.config_store.client import ConfigStoreClient
from fplus.edge_sync.agent import Agent
from fplus.edge_sync.kube import Kube
from fplus.edge_sync.settings import config_store_client, from_env
from harness.certs import make_cert
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, status, wait_for
from tests.cluster_manager.api.conftest import commission, report_edge
from tests.edge_sync.emulator import (
    HELM_RELEASES,
    KUSTOMIZATIONS,
    SEALED_SECRETS,
    KubeHarness,
)
from tests.edge_sync.helpers import NAMESPACE, Edge, agent_env
from tests.edge_sync.test_agent_flux import put

NAME = "sync-edge"
pytestmark = pytest.mark.filterwarnings(  # kmock 0.8 loads its discovery data this way
    "ignore:read_binary is deprecated:DeprecationWarning")


@pytest.fixture
def kube() -> Iterator[KubeHarness]:
    harness = KubeHarness()
    yield harness
    harness.close()


def _edge_credentials(stack: Stack, cluster: str) -> Edge:
    """The cluster's own Edge Sync principal with a password the test knows (the test plays
    the bootstrap script, which would have delivered the real one)."""
    principal = status(stack.admin, cluster)["sync"]["uuid"]
    password = secrets.token_urlsafe(16)
    with ConfigStoreClient(stack.store.url, "admin", ADMIN_PASSWORD) as cs:
        cs.set_password(principal, password)
    return Edge(cluster, NAME, principal, SYNC.principal_name(NAME), password)


@pytest.fixture
def agent(stack: Stack, kube: KubeHarness, sealing_key: Any) -> Iterator[tuple[str, Agent]]:
    cluster = commission(stack, NAME)
    report_edge(stack, cluster, kubeseal_cert=make_cert(sealing_key))
    edge = _edge_credentials(stack, cluster)
    settings = from_env(agent_env(edge, stack.store.url, FLUX_INTERVAL="0.2",
                                  HEARTBEAT_INTERVAL="0.2"))
    cs = config_store_client(settings, retries=1, backoff=0.05, timeout=5)
    cfg = client.Configuration()
    cfg.host = kube.url
    running = Agent(settings, cs, Kube(client.ApiClient(cfg), timeout=5), NAMESPACE,
                    reconnect_delay=(0.2, 0.4))
    yield cluster, running
    running.stop(timeout=5)
    cs.close()


def _sync(root: Api, cluster: str) -> dict[str, Any]:
    r = root.get(f"/v1/cluster/{cluster}/status")
    assert r.status_code == 200, r.text
    return r.json()


def _wait_sync(root: Api, cluster: str, state: str, what: str,
               failing: int | None = None) -> dict[str, Any]:
    """The sync answer once it says ``state`` (and, if given, names ``failing`` failures:
    two objects changed one after the other may be reported one report apart)."""
    def reached() -> dict[str, Any] | None:
        body = _sync(root, cluster)
        if failing is not None and len(body["edge"]["failing"]) != failing:
            return None
        return body if body["syncState"] == state else None
    return wait_for(reached, what=what)


def _metric(root: Api, state: str) -> int:
    text = root.get("/metrics").text
    found = re.search(rf'^cluster_manager_clusters_sync{{state="{state}"}} (\S+)$', text, re.M)
    assert found, text
    return int(float(found[1]))


def _unsealed(root: Api, cluster: str) -> Any:
    listing = root.get(f"/v1/cluster/{cluster}/secret").json()
    [db] = [s for s in listing if (s.get("namespace"), s.get("name")) == ("app", "db")]
    return db["unsealed"]


def _applied(kube: KubeHarness, commit: str) -> None:
    """kustomize-controller's part: the self-link applied ``commit``."""
    put(kube, KUSTOMIZATIONS, NAMESPACE, "self-link", "True", "ReconciliationSucceeded",
        f"Applied revision: main@sha1:{commit}", lastAppliedRevision=f"main@sha1:{commit}")


def test_sync_moves_progressing_synced_degraded_synced(
        stack: Stack, root: Api, kube: KubeHarness, agent: tuple[str, Agent]) -> None:
    cluster, running = agent
    assert root.put(f"/v1/cluster/{cluster}/secret/app/db/password",
                    data=b"hunter2").status_code == 204
    before = _sync(root, cluster)
    assert before["syncState"] == "Unknown", before  # Edge Sync has not reported yet
    head = before["repoCommit"]
    assert re.fullmatch("[0-9a-f]{40}", head)
    assert _unsealed(root, cluster) == "unknown"

    # Flux applied the commission commit, not the seal yet; Sealed Secrets is installing
    _applied(kube, status(stack.admin, cluster)["commit"])
    put(kube, HELM_RELEASES, NAMESPACE, "sealed-secrets", "Unknown", "Progressing",
        "Running 'install' action")
    running.start()
    progressing = _wait_sync(root, cluster, "Progressing", "Progressing")
    assert progressing["edge"]["flux"]["progressing"] == 1

    # everything applied and ready, the secret unsealed
    _applied(kube, head)
    put(kube, HELM_RELEASES, NAMESPACE, "sealed-secrets", "True", "InstallSucceeded",
        history=[{"chartVersion": "2.17.1"}])
    put(kube, SEALED_SECRETS, "app", "db", "True", "", "SealedSecret unsealed successfully")
    synced = _wait_sync(root, cluster, "Synced", "Synced")
    assert synced["edge"]["appliedCommit"] == head and synced["edge"]["failing"] == []
    assert synced["edge"]["flux"] == {"total": 3, "ready": 3, "failed": 0, "progressing": 0}
    assert _unsealed(root, cluster) is True
    wait_for(lambda: _metric(root, "Synced") >= 1, timeout=40, what="Synced in /metrics")

    # an upgrade fails, and the secret cannot be decrypted any more
    put(kube, HELM_RELEASES, NAMESPACE, "sealed-secrets", "False", "UpgradeFailed",
        "upgrade retries exhausted", since="2026-11-25T11:00:00Z")
    put(kube, SEALED_SECRETS, "app", "db", "False", "ErrUnsealFailed",
        "no key could decrypt secret (password)", since="2026-11-25T11:05:00Z")
    degraded = _wait_sync(root, cluster, "Degraded", "Degraded", failing=2)
    assert [(f["kind"], f["name"], f.get("reason")) for f in degraded["edge"]["failing"]] == [
        ("SealedSecret", "db", "ErrUnsealFailed"),  # newest failure first
        ("HelmRelease", "sealed-secrets", "UpgradeFailed")]
    assert degraded["edge"]["failing"][0]["message"] == "no key could decrypt secret (password)"
    assert "2 object(s) failed" in degraded["syncReason"]
    assert _unsealed(root, cluster) is False
    wait_for(lambda: _metric(root, "Degraded") >= 1, timeout=40, what="Degraded in /metrics")

    # fixed on the edge
    put(kube, HELM_RELEASES, NAMESPACE, "sealed-secrets", "True", "UpgradeSucceeded")
    put(kube, SEALED_SECRETS, "app", "db", "True", "", "SealedSecret unsealed successfully")
    _wait_sync(root, cluster, "Synced", "Synced again")
    assert _unsealed(root, cluster) is True

    # a new commit in the repo: Progressing until the edge applies it
    assert root.put(f"/v1/cluster/{cluster}/secret/app/db/user", data=b"u").status_code == 204
    moved = _wait_sync(root, cluster, "Progressing", "Progressing after a new commit")
    assert moved["repoCommit"] != head
    _applied(kube, moved["repoCommit"])
    _wait_sync(root, cluster, "Synced", "Synced at the new commit")
