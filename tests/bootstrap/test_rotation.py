"""Rotation without outage, end to end: a real stack, the served script run with the real
kubectl against the emulated edge, and a real ``edge-sync run`` process on that edge.

Nothing runs pods in the emulator, so the test plays three parts and says so where it does:
source- and kustomize-controller (clone the self-link repo with the Flux Secret's credentials,
then server-side apply what it holds, Namespaces first), the kubelet (copy the
``edge-sync-credentials`` Secret into the files the Deployment mounts, replacing them
atomically as a Secret volume does) and the Deployment itself (start ``edge-sync run`` with
the environment the Deployment gives it: the ``cluster-config`` ConfigMap, ``POD_NAMESPACE``,
``FPLUS_*_FILE``; only the intervals are test-sized). The ``restartedAt`` annotation a
script sets is checked, but no pod restarts: the agent must go on without one.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from harness.servers import (
    ADMIN_PASSWORD,
    Api,
    ServiceProcess,
    cluster_manager_process,
    git_server_process,
)
from harness.stack import Stack, create_cluster, git, status, wait_for
from tests.bootstrap.cluster import DEPLOYMENTS, EdgeCluster
from tests.shared_files import FLUX_INSTALL, need

NS = "fplus-edge"
SYNC_SECRET = "edge-sync-credentials"
GIT_REPOSITORIES = "source.toolkit.fluxcd.io/v1/gitrepositories"
STATUS = uuids.App.EdgeClusterStatus
FIRST = ("Namespace", "CustomResourceDefinition")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Config Store, Git server and a Cluster Manager that embeds the pinned Flux release."""
    root = tmp_path_factory.mktemp("rotation")
    store = ServiceProcess(root / "cs").start()
    gits = git_server_process(root / "git", store.url).start()
    manager = cluster_manager_process(root / "cm", store.url, gits.url, root / "git" / "repos",
                                      "--flux-install-file", str(need(FLUX_INSTALL))).start()
    running = Stack(root, store, gits, manager)
    yield running
    running.stop()


def secret_data(edge: EdgeCluster, name: str) -> dict[str, str]:
    return edge.secrets(NS)[name]


class Kustomize:
    """Plays source- and kustomize-controller for the self-link (see the module docstring)."""

    def __init__(self, edge: EdgeCluster, work: Path) -> None:
        self.edge, self.work = edge, work
        self.error: str | None = None
        self.applied = 0
        self.inventory: list[dict[str, Any]] = []
        """What the last apply applied (Flux's inventory: what a later apply prunes)."""

    def __call__(self, kustomization: dict[str, Any]) -> bool:
        try:
            self.apply(kustomization["metadata"]["namespace"])
        except Exception as exc:  # reported by the test, never raised in the controllers
            self.error = f"{type(exc).__name__}: {exc}"
            return False
        return True

    def apply(self, namespace: str, *, prune: bool = False) -> str:
        """Apply the repo's head (pruning what left it, with ``prune``); return its commit."""
        repo = self.edge.objects(GIT_REPOSITORIES, namespace)["self-link"]["spec"]
        creds = secret_data(self.edge, repo["secretRef"]["name"])
        url = repo["url"].replace("://", "://{}:{}@".format(
            requests.utils.quote(creds["username"], safe=""), creds["password"]), 1)
        checkout = self.work / f"checkout-{self.applied}"
        cloned = git("clone", "-q", "--depth", "1", url, str(checkout))
        assert cloned.returncode == 0, cloned.stderr.replace(creds["password"], "***")
        docs = [d for path in sorted(checkout.rglob("*.yaml"))
                for d in yaml.safe_load_all(path.read_text()) if d]
        docs.sort(key=lambda d: d["kind"] not in FIRST)  # Namespaces first, as Flux does
        manifest = self.work / "repo.yaml"
        manifest.write_text(yaml.safe_dump_all(docs))
        done = self.edge.kubectl("apply", "--server-side", "--force-conflicts",
                                 "--field-manager=kustomize-controller", "-f", str(manifest))
        assert done.returncode == 0, done.stderr
        gone = [d for d in self.inventory if _identity(d) not in {_identity(n) for n in docs}]
        if prune and gone:
            removed = self.work / "pruned.yaml"
            removed.write_text(yaml.safe_dump_all(gone))
            deleted = self.edge.kubectl("delete", "-f", str(removed))
            assert deleted.returncode == 0, deleted.stderr
        self.inventory = docs
        self.applied += 1
        return git("-C", str(checkout), "rev-parse", "HEAD").stdout.strip()


def _identity(doc: dict[str, Any]) -> tuple[str, str, str | None, str]:
    meta = doc["metadata"]
    return doc["apiVersion"], doc["kind"], meta.get("namespace"), meta["name"]


class Agent:
    """``edge-sync run`` as the Deployment runs it, its credentials in files the test keeps
    in step with the Secret (the kubelet's part)."""

    def __init__(self, edge: EdgeCluster, work: Path) -> None:
        self.edge = edge
        self.dir = work / "credentials"
        self.dir.mkdir()
        self.copy_secret()
        config = edge.objects("v1/configmaps", NS)["cluster-config"]["data"]
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("FPLUS_", "CLUSTER_", "KUBERNETES_"))}
        env |= config | {
            "POD_NAMESPACE": NS, "FPLUS_USER_FILE": str(self.dir / "username"),
            "FPLUS_PASSWORD_FILE": str(self.dir / "password"), "LOG_LEVEL": "INFO",
            "HEARTBEAT_INTERVAL": "0.5", "CERT_INTERVAL": "5", "CERT_RETRY": "5",
            "WATCH_TIMEOUT": "5", "RETRY_INITIAL": "0.2", "RETRY_MAX": "1"}
        self.log = work / "edge-sync.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "fplus.edge_sync.cli", "run", "--kubeconfig",
                 str(edge.kubeconfig)], env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)

    def copy_secret(self) -> dict[str, str]:
        """Write the Secret's keys as files, swapped in at once as a Secret volume is."""
        data = secret_data(self.edge, SYNC_SECRET)
        for key, value in data.items():
            tmp = self.dir / f".{key}.new"
            tmp.write_text(value)
            tmp.replace(self.dir / key)
        return data

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
        return self.proc.wait(timeout=20)


def heartbeats(cs: ConfigStoreClient, cluster: str, agent: Agent, times: int = 3) -> None:
    """``lastSeen`` is written ``times`` more times, and the agent never restarted."""
    for n in range(times):
        seen = (cs.get_config(STATUS, cluster) or {}).get("lastSeen") or ""
        wait_for(lambda seen=seen: ((cs.get_config(STATUS, cluster) or {}).get("lastSeen")
                                    or "") > seen, timeout=30, what=f"heartbeat {n + 1}")
        assert agent.proc.poll() is None, agent.log.read_text()


def token_status(store_url: str, username: str, password: str) -> int:
    return requests.post(f"{store_url}/token", auth=(username, password), timeout=10).status_code


def test_rotation_without_outage(stack: Stack, tmp_path: Path) -> None:
    cluster = create_cluster(stack.admin, "rotating", NS)
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), timeout=60,
             what="the cluster commissioned")
    manager = Api(stack.manager.url, ("admin", ADMIN_PASSWORD))

    def new_url() -> str:
        r = manager.post(f"/v1/cluster/{cluster}/bootstrap-url")
        assert r.status_code == 200, r.text
        return r.json()

    edge = EdgeCluster(tmp_path / "edge")
    kustomize = Kustomize(edge, tmp_path)
    edge.controllers.on_kustomization = kustomize
    cs = ConfigStoreClient(stack.store.url, "admin", ADMIN_PASSWORD)
    agent: Agent | None = None
    try:
        # -r: the served script would check ghcr.io, which a test machine need not reach
        first = edge.run(requests.get(new_url(), timeout=30).text, "-y", "-r")
        assert first.returncode == 0 and first.stdout.endswith("Done.\n"), \
            (first.stderr, kustomize.error)
        assert edge.has(DEPLOYMENTS, NS, "edge-sync")  # Flux (the test) applied the repo
        agent = Agent(edge, tmp_path)
        heartbeats(cs, cluster, agent)
        running = secret_data(edge, SYNC_SECRET)

        # (a) a URL checked with HEAD (curl -I), then fetched but never run: the running
        # agent keeps its credentials
        checked = new_url()
        assert requests.head(checked, timeout=30).status_code == 200
        assert requests.get(checked, timeout=30).status_code == 200  # HEAD did not use it up
        heartbeats(cs, cluster, agent)
        assert token_status(stack.store.url, running["username"], running["password"]) == 200

        # (b) a fresh script run: new Secret, Edge Sync restarted, the kubelet's copy
        second = edge.run(requests.get(new_url(), timeout=30).text, "-y", "-r")
        assert second.returncode == 0, second.stderr
        assert "Restarting Edge Sync (deployment/edge-sync)" in second.stdout
        template = edge.objects(DEPLOYMENTS, NS)["edge-sync"]["spec"]["template"]
        assert "kubectl.kubernetes.io/restartedAt" in template["metadata"]["annotations"]
        rotated = secret_data(edge, SYNC_SECRET)
        assert rotated["password"] != running["password"]
        heartbeats(cs, cluster, agent, times=2)  # before the kubelet catches up
        assert agent.copy_secret() == rotated
        heartbeats(cs, cluster, agent, times=2)

        # the new password is used (the grace period of the old one ends, and with it the
        # tokens it obtained), and the Config Store restarts: the agent logs in again with
        # what its files hold now, still without a restart
        assert token_status(stack.store.url, rotated["username"], rotated["password"]) == 200
        assert token_status(stack.store.url, running["username"], running["password"]) == 401
        stack.store.stop()
        stack.store.start()
        heartbeats(cs, cluster, agent)
    finally:
        code = agent.stop() if agent is not None else 0
        cs.close()
        edge.close()
    log = agent.log.read_text() if agent is not None else ""
    assert code == 0, log
    for secret in (running, rotated):
        assert secret["password"] not in log
    assert base64.b64encode(rotated["password"].encode()).decode() not in log
    assert log.count("for cluster rotating") == 1, log  # one start: all in one process
