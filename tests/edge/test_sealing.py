"""Secrets sealed by the Cluster Manager, opened by the real Sealed Secrets controller.

The controller is installed by the real helm-controller from the chart in the central
charts repo (the pinned module's own chart), makes its key, and Edge Sync, running with
the RBAC the repo grants it, reports its certificate. Values sealed through ``fplus secret
seal`` in all three scopes must come out as Secrets holding exactly those values, and
``kubeseal --recovery-unseal`` must open our SealedSecret files offline.
"""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import yaml

from harness import edgetools
from harness.realedge import Edge
from harness.servers import ADMIN_PASSWORD
from harness.stack import Stack, git, wait_for
from tests.edge.conftest import Fplus, bootstrap, wait_applied, wait_ready

VALUES = {"strict": "s3cret: 'strict' #1", "namespace-wide": "namespace wide\nsecond line",
          "cluster-wide": "clüster-wïde ✓"}


def _secret_value(edge: Edge, namespace: str, name: str, key: str) -> str | None:
    secret = edge.plane.get("-n", namespace, f"secret/{name}")
    data = (secret or {}).get("data") or {}
    return base64.b64decode(data[key]).decode() if key in data else None


def test_values_sealed_in_every_scope_come_out_of_the_real_controller(
        edge: Edge, edge_stack: Stack, fplus: Fplus, tmp_path: Path) -> None:
    cluster = bootstrap(edge, fplus, "sealing", tmp_path)
    namespace = cluster["spec"]["namespace"]
    wait_ready(edge, "helmrelease/sealed-secrets", namespace, timeout=300)
    wait_for(lambda: (fplus.json("cluster", "get", "sealing").get("edge") or {})
             .get("sealingCertificate"), timeout=180, what="Edge Sync to report the cert")

    for scope, value in VALUES.items():
        fplus("secret", "seal", "sealing", f"{namespace}/app-{scope}", "password",
              "--scope", scope, stdin=value)
    wait_applied(edge, fplus, "sealing")
    for scope, value in VALUES.items():
        got = wait_for(lambda s=scope: _secret_value(edge, namespace, f"app-{s}", "password"),
                       timeout=120, what=f"the controller to unseal app-{scope}")
        assert got == value

    # kubeseal opens our files offline with the controller's private key
    keys = edge.plane.get("-n", "sealed-secrets", "secrets", "-l",
                          "sealedsecrets.bitnami.com/sealed-secrets-key=active")["items"]
    key_file = tmp_path / "key.pem"
    key_file.write_bytes(base64.b64decode(keys[0]["data"]["tls.key"]))
    clone = tmp_path / "repo"
    url = (f"http://admin:{ADMIN_PASSWORD}@127.0.0.1:{edge_stack.git.port}"
           f"/uuid/{cluster['uuid']}")
    assert git("clone", "-q", url, str(clone)).returncode == 0
    sealed = clone / "edo" / "secrets" / namespace / "app-strict.yaml"
    opened = subprocess.run([str(edgetools.binary("kubeseal")), "--recovery-unseal",
                             "--recovery-private-key", str(key_file), "-o", "yaml"],
                            input=sealed.read_text(), capture_output=True, text=True,
                            timeout=60, check=False)
    assert opened.returncode == 0, opened.stderr
    secret = yaml.safe_load(opened.stdout)
    assert base64.b64decode(secret["data"]["password"]).decode() == VALUES["strict"]
