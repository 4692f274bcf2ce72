"""Secrets sealed by the Cluster Manager, opened by the real Sealed Secrets controller.

The controller is installed by the real helm-controller from the chart in the central
charts repo (the pinned module's own chart), makes its key, and Edge Sync, running with
the RBAC the repo grants it, reports its certificate. Values sealed through ``fplus secret
seal`` in all three scopes must come out as Secrets holding exactly those values,
``kubeseal --recovery-unseal`` must open our SealedSecret files offline, values ``kubeseal
--raw`` seals must be listed (and one sealed for another name reported ``unsealed:
false``), and after the controller's key changes and an operator approves it, escrowed
values are re-sealed to the new key.
"""

from __future__ import annotations

import base64
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from harness import edgetools
from harness.certs import make_cert
from harness.realedge import Edge
from harness.servers import ADMIN_PASSWORD, run_command
from harness.stack import Stack, git, wait_for
from tests.edge.conftest import Fplus, bootstrap, wait_applied, wait_ready

VALUES = {"strict": "s3cret: 'strict' #1", "namespace-wide": "namespace wide\nsecond line",
          "cluster-wide": "clüster-wïde ✓"}


def _secret_value(edge: Edge, namespace: str, name: str, key: str) -> str | None:
    secret = edge.plane.get("-n", namespace, f"secret/{name}")
    data = (secret or {}).get("data") or {}
    return base64.b64decode(data[key]).decode() if key in data else None


@pytest.fixture(scope="module")
def manager_args(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ...]:
    """This module's stack keeps sealed values in escrow, so they can be re-sealed."""
    key = tmp_path_factory.mktemp("escrow") / "escrow.key"
    done = run_command("fplus.cluster_manager.cli", "escrow", "init", str(key))
    assert done.returncode == 0, done.stderr
    return ("--secret-escrow", str(key), "--reseal-interval", "2")


@pytest.fixture(scope="module")
def cluster(edge: Edge, edge_stack: Stack, fplus: Fplus,
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A bootstrapped cluster whose controller runs and whose certificate is reported."""
    cluster = bootstrap(edge, fplus, "sealing", tmp_path_factory.mktemp("sealing"))
    wait_ready(edge, "helmrelease/sealed-secrets", cluster["spec"]["namespace"], timeout=300)
    wait_for(lambda: (fplus.json("cluster", "get", "sealing").get("edge") or {})
             .get("sealingCertificate"), timeout=180, what="Edge Sync to report the cert")
    return cluster


def _controller_key(edge: Edge) -> dict[str, bytes]:
    """The controller's active key pair (``tls.crt``, ``tls.key``), as an admin reads it."""
    keys = edge.plane.get("-n", "sealed-secrets", "secrets", "-l",
                          "sealedsecrets.bitnami.com/sealed-secrets-key=active")["items"]
    return {k: base64.b64decode(v) for k, v in keys[0]["data"].items()}


def _clone(stack: Stack, cluster: dict[str, Any], where: Path) -> Path:
    url = f"http://admin:{ADMIN_PASSWORD}@127.0.0.1:{stack.git.port}/uuid/{cluster['uuid']}"
    done = git("clone", "-q", url, str(where))
    assert done.returncode == 0, done.stderr
    return where


def test_values_sealed_in_every_scope_come_out_of_the_real_controller(
        edge: Edge, edge_stack: Stack, fplus: Fplus, cluster: dict[str, Any],
        tmp_path: Path) -> None:
    namespace = cluster["spec"]["namespace"]

    for scope, value in VALUES.items():
        fplus("secret", "seal", "sealing", f"{namespace}/app-{scope}", "password",
              "--scope", scope, stdin=value)
    wait_applied(edge, fplus, "sealing")
    for scope, value in VALUES.items():
        got = wait_for(lambda s=scope: _secret_value(edge, namespace, f"app-{s}", "password"),
                       timeout=120, what=f"the controller to unseal app-{scope}")
        assert got == value

    # kubeseal opens our files offline with the controller's private key
    key_file = tmp_path / "key.pem"
    key_file.write_bytes(_controller_key(edge)["tls.key"])
    clone = _clone(edge_stack, cluster, tmp_path / "repo")
    sealed = clone / "edo" / "secrets" / namespace / "app-strict.yaml"
    opened = subprocess.run([str(edgetools.binary("kubeseal")), "--recovery-unseal",
                             "--recovery-private-key", str(key_file), "-o", "yaml"],
                            input=sealed.read_text(), capture_output=True, text=True,
                            timeout=60, check=False)
    assert opened.returncode == 0, opened.stderr
    secret = yaml.safe_load(opened.stdout)
    assert base64.b64decode(secret["data"]["password"]).decode() == VALUES["strict"]


def _kubeseal_raw(cert: Path, namespace: str, name: str, value: str) -> str:
    done = subprocess.run([str(edgetools.binary("kubeseal")), "--raw", "--cert", str(cert),
                           "--scope", "strict", "--namespace", namespace, "--name", name,
                           "--from-file=/dev/stdin"], input=value, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _sealed_secret(namespace: str, name: str, key: str, encrypted: str) -> str:
    return yaml.safe_dump({
        "apiVersion": "bitnami.com/v1alpha1", "kind": "SealedSecret",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"encryptedData": {key: encrypted},
                 "template": {"metadata": {"name": name, "namespace": namespace}}}})


def test_kubeseal_raw_values_are_listed_and_a_mis_sealed_one_reports_unsealed_false(
        edge: Edge, edge_stack: Stack, fplus: Fplus, cluster: dict[str, Any],
        tmp_path: Path) -> None:
    namespace = cluster["spec"]["namespace"]
    cert = tmp_path / "cert.pem"
    cert.write_bytes(_controller_key(edge)["tls.crt"])
    clone = _clone(edge_stack, cluster, tmp_path / "repo")
    place = clone / "edo" / "secrets" / namespace
    place.mkdir(parents=True, exist_ok=True)
    (place / "by-kubeseal.yaml").write_text(_sealed_secret(
        namespace, "by-kubeseal", "token", _kubeseal_raw(cert, namespace, "by-kubeseal",
                                                         "from kubeseal")))
    # sealed for another name: the strict scope makes it unsealable as this one
    (place / "mis-sealed.yaml").write_text(_sealed_secret(
        namespace, "mis-sealed", "token", _kubeseal_raw(cert, namespace, "elsewhere", "x")))
    for args in (("add", "-A"), ("-c", "user.name=t", "-c", "user.email=t@example.invalid",
                                 "commit", "-q", "-m", "sealed by kubeseal"), ("push", "-q")):
        done = git(*args, cwd=clone)
        assert done.returncode == 0, done.stderr
    wait_applied(edge, fplus, "sealing")

    got = wait_for(lambda: _secret_value(edge, namespace, "by-kubeseal", "token"),
                   timeout=120, what="the controller to unseal kubeseal's value")
    assert got == "from kubeseal"

    def listed() -> dict[str, Any] | None:
        found = {s["name"]: s for s in fplus.json("secret", "list", "sealing")}
        done = {"by-kubeseal", "mis-sealed"} <= found.keys() and \
            found["by-kubeseal"]["unsealed"] is True and found["mis-sealed"]["unsealed"] is False
        return found if done else None

    found = wait_for(listed, timeout=180, what="Edge Sync to report both SealedSecrets")
    assert found["by-kubeseal"]["keys"] == ["token"]
    assert found["by-kubeseal"]["scope"] == "strict"
    assert _secret_value(edge, namespace, "mis-sealed", "token") is None


def _new_controller_key(edge: Edge) -> bytes:
    """Give the controller a new key pair (as "bring your own key" does: an active tls
    Secret in its namespace), restart it, and return the new private key (PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    edge.plane.apply([{
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": "sealed-secrets-key-rotated", "namespace": "sealed-secrets",
                     "labels": {"sealedsecrets.bitnami.com/sealed-secrets-key": "active"}},
        "data": {"tls.crt": base64.b64encode(make_cert(key, datetime.now(UTC)).encode()).decode(),
                 "tls.key": base64.b64encode(pem).decode()}}])
    edge.plane.kubectl("-n", "sealed-secrets", "rollout", "restart",
                       "deployment/sealed-secrets-controller")
    return pem


def test_after_the_key_changes_escrowed_values_are_resealed_once_approved(
        edge: Edge, edge_stack: Stack, fplus: Fplus, cluster: dict[str, Any],
        tmp_path: Path) -> None:
    namespace = cluster["spec"]["namespace"]
    fplus("secret", "seal", "sealing", f"{namespace}/rotated", "password",
          stdin="kept across keys")
    wait_applied(edge, fplus, "sealing")
    wait_for(lambda: _secret_value(edge, namespace, "rotated", "password"), timeout=120,
             what="the first unseal")

    new_key = _new_controller_key(edge)
    # Edge Sync looks at the certificate hourly (CERT_INTERVAL): restart it, not wait
    edge.plane.kubectl("-n", namespace, "rollout", "restart", "deployment/edge-sync")
    pending = wait_for(lambda: fplus.json("cluster", "get", "sealing").get("pendingKey"),
                       timeout=180, what="the new key to wait for approval")
    before = fplus.json("cluster", "get", "sealing")["repoCommit"]
    fplus("cluster", "approve-key", "sealing", pending["fingerprint"])
    wait_for(lambda: fplus.json("cluster", "get", "sealing")["repoCommit"] != before,
             timeout=120, what="the re-seal commit")
    wait_applied(edge, fplus, "sealing")

    key_file = tmp_path / "new.pem"
    key_file.write_bytes(new_key)
    sealed = _clone(edge_stack, cluster, tmp_path / "repo") / "edo" / "secrets" / \
        namespace / "rotated.yaml"
    opened = subprocess.run([str(edgetools.binary("kubeseal")), "--recovery-unseal",
                             "--recovery-private-key", str(key_file), "-o", "yaml"],
                            input=sealed.read_text(), capture_output=True, text=True,
                            timeout=60, check=False)
    assert opened.returncode == 0, opened.stderr
    assert base64.b64decode(yaml.safe_load(opened.stdout)["data"]["password"]).decode() == \
        "kept across keys"
    assert _secret_value(edge, namespace, "rotated", "password") == "kept across keys"
