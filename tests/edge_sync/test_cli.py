"""The real ``edge-sync run`` command as a subprocess against the emulator."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import yaml
from kubernetes import client

from fplus.config_store.client import ConfigStoreClient
from harness.certs import certificate
from harness.kube import node
from tests.edge_sync.emulator import HELM_RELEASES, KubeHarness
from tests.edge_sync.helpers import (
    CONTROLLER,
    NAMESPACE,
    SS_NAMESPACE,
    Edge,
    agent_env,
    chart_template,
    controller_service,
    deployment,
    status,
    wait_for,
)

EDGE_SYNC = [sys.executable, "-m", "fplus.edge_sync.cli"]


def _kubeconfig(path: Path, server: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "edge",
        "clusters": [{"name": "edge", "cluster": {"server": server}}],
        "users": [{"name": "edge-sync", "user": {}}],
        "contexts": [{"name": "edge", "context": {"cluster": "edge", "user": "edge-sync",
                                                   "namespace": NAMESPACE}}]}))
    return path


def _env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("FPLUS_", "CLUSTER_", "KUBERNETES_"))}
    return base | extra


def test_edge_sync_run(tmp_path: Path, edge_store, cs_admin: ConfigStoreClient, edge: Edge,
                       kube: KubeHarness) -> None:
    client.CoreV1Api(kube.api()).create_node(node("edge-1", control_plane=True))
    kube.put("v1/services", SS_NAMESPACE, CONTROLLER, controller_service())
    pem = certificate(7)
    kube.call(lambda: kube.emulator.proxied.update(
        {(SS_NAMESPACE, CONTROLLER, "v1/cert.pem"): pem.encode()}))
    d = deployment(cs_admin, edge, chart_template(cs_admin))
    (tmp_path / "password").write_text(edge.password + "\n")
    env = agent_env(edge, edge_store.url, FPLUS_PASSWORD_FILE=str(tmp_path / "password"))
    del env["FPLUS_PASSWORD"], env["POD_NAMESPACE"]  # from a file; namespace from kubeconfig
    config = _kubeconfig(tmp_path / "kubeconfig", kube.url)
    log = tmp_path / "edge-sync.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([*EDGE_SYNC, "run", "--kubeconfig", str(config)],
                                env=_env(**env, LOG_LEVEL="INFO"), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: status(cs_admin, edge).get("kubeseal_cert") == pem
                 and status(cs_admin, edge).get("hosts") and status(cs_admin, edge)
                 .get("lastSeen"), timeout=30, what="hosts, certificate and heartbeat")
        wait_for(lambda: f"edge-agent-{d}" in kube.objects(HELM_RELEASES, NAMESPACE),
                 what="the deployment applied")
        assert proc.poll() is None
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        code = proc.wait(timeout=20)
    text = log.read_text()
    assert code == 0, text
    assert edge.password not in text
    assert "stopping" in text


def test_bad_settings_exit_with_a_message(tmp_path: Path) -> None:
    result = subprocess.run([*EDGE_SYNC, "run"], env=_env(CLUSTER_UUID="nope"),
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert "CLUSTER_UUID must be a lower-case UUID" in result.stderr
    assert "CONFIG_STORE_URL is required" in result.stderr
    assert "Traceback" not in result.stderr
