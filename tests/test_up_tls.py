"""``cluster-manager up --tls``: the README walkthrough over HTTPS with ``curl --cacert``, and
the CA carried to the edge by the bootstrap script (Flux's GitRepository Secret, Edge Sync)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import certifi
import requests
import yaml

from harness.servers import free_port_block
from tests.bootstrap.edge import script_files
from tests.test_readme import walkthrough, walkthrough_env


def _wait_up(url: str, ca: Path, stack: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if stack.poll() is not None:  # say why (a port taken meanwhile, say)
            err = stack.stderr.read() if stack.stderr is not None else ""
            raise AssertionError(f"up exited with {stack.returncode}: {err[-2000:]}")
        try:
            if requests.get(url, timeout=1, verify=str(ca)).ok:
                return
        except (requests.ConnectionError, OSError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer")


def _by_kind(text: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for doc in yaml.safe_load_all(text):
        if doc:
            out.setdefault(doc["kind"], []).append(doc)
    return out


def test_readme_walkthrough_over_https(tmp_path: Path) -> None:
    port = free_port_block(3)
    data, here, tmp = tmp_path / "data", tmp_path / "here", tmp_path / "tmp"
    here.mkdir()
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "FPLUS_ADMIN_PASSWORD"}
    stack = subprocess.Popen(
        [sys.executable, "-m", "fplus.cluster_manager.cli", "up", "--data-dir", str(data),
         "--port", str(port), "--tls"],
        env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    ca = data / "tls" / "ca.crt"
    cm, cs = f"https://127.0.0.1:{port}", f"https://127.0.0.1:{port + 1}"
    try:
        _wait_up(f"{cm}/ping", ca, stack)
        untrusted = subprocess.run(["curl", "-sf", f"{cs}/ping"], capture_output=True,
                                   timeout=30)
        plain = subprocess.run(["curl", "-sf", f"http://127.0.0.1:{port + 1}/ping"],
                               capture_output=True, timeout=30)
        # A system-wide REQUESTS_CA_BUNDLE (common on hosts) must not beat the given CA.
        run_env = walkthrough_env(tmp_path, SCHEME="https", CA=str(ca), CS=cs, CM=cm,
                                  GIT_HOST=f"127.0.0.1:{port + 2}", DATA_DIR=str(data),
                                  TMPDIR=str(tmp), REQUESTS_CA_BUNDLE=certifi.where())
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", walkthrough()],
                                cwd=here, env=run_env, capture_output=True, text=True,
                                timeout=180)
        assert result.returncode == 0, result.stderr + result.stdout
        password = (data / "config-store/admin-password").read_text().strip()
        [cluster] = requests.get(f"{cm}/v1/cluster", auth=("admin", password), timeout=10,
                                 verify=str(ca)).json()["clusters"]
        issued = requests.post(f"{cm}/v1/cluster/{cluster['uuid']}/bootstrap-url",
                               auth=("admin", password), timeout=10, verify=str(ca))
        openapi = yaml.safe_load(requests.get(f"{cm}/openapi.yaml", timeout=10,
                                              verify=str(ca)).text)
        console = requests.post(f"{cm}/ui/login", data={"username": "admin",
                                                         "password": password},
                                allow_redirects=False, timeout=10, verify=str(ca))
    finally:
        with contextlib.suppress(ProcessLookupError):  # already exited: _wait_up said why
            os.killpg(stack.pid, signal.SIGTERM)
        out, err = stack.communicate(timeout=30)
    assert untrusted.returncode == 60  # curl: the certificate is not from a CA it trusts
    assert plain.returncode != 0  # HTTPS only on that port
    assert f"curl --cacert {ca}" in out and f"CA            {ca}" in out
    assert "Traceback" not in err
    # The console's session cookie never travels over plain HTTP from an HTTPS stack.
    assert console.status_code == 303
    assert "; Secure" in console.headers["Set-Cookie"]
    assert "HttpOnly" in console.headers["Set-Cookie"]
    for key in ("ca.key", "server.key"):
        assert (data / "tls" / key).stat().st_mode & 0o077 == 0
    assert (data / "tls").stat().st_mode & 0o077 == 0

    # The walkthrough's script, fetched with curl --cacert: Flux's GitRepository trusts the CA
    [work] = tmp.iterdir()
    files = script_files((work / "bootstrap.sh").read_text(), tmp_path / "unpacked")
    [repository] = _by_kind(files["self-link.yaml"])["GitRepository"]
    assert repository["spec"]["url"].startswith(f"https://127.0.0.1:{port + 2}/uuid/")
    secrets = {s["metadata"]["name"]: s["stringData"]
               for s in _by_kind(files["credentials.yaml"])["Secret"]}
    assert secrets[repository["spec"]["secretRef"]["name"]]["ca.crt"] == ca.read_text()
    assert all(values["ca.crt"] == ca.read_text() for values in secrets.values())
    # ... and Edge Sync reads it from its mounted credentials Secret
    [deployment] = _by_kind((work / "line-1/edo/cluster/edge-sync.yaml").read_text()
                            )["Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert {"name": "FPLUS_CA_FILE", "value": "/etc/fplus/credentials/ca.crt"} \
        in container["env"]
    assert "ca.crt" not in (work / "line-1/edo/cluster/self-link.yaml").read_text()

    assert issued.json().startswith(f"{cm}/v1/cluster/")
    assert "loopback" in issued.headers["Warning"]
    assert "plain HTTP" not in issued.headers["Warning"]
    assert openapi["servers"] == [{"url": cm}]
