"""``cluster-manager up --advertise``: every URL that reaches an edge names the advertised
host. 127.0.0.2 stands for a LAN address (tests send traffic to loopback addresses only): the
stack listens there alone, and the README walkthrough runs against it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests
import yaml

from harness.servers import free_port_block, wait_until_up
from tests.test_readme import walkthrough, walkthrough_env

HOST = "127.0.0.2"


def _files(root: Path) -> dict[Path, str]:
    return {p: p.read_text() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts}


def test_up_advertise_gives_edges_only_that_address(tmp_path: Path) -> None:
    port = free_port_block(3)
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "FPLUS_ADMIN_PASSWORD"}
    stack = subprocess.Popen(
        [sys.executable, "-m", "fplus.cluster_manager.cli", "up", "--data-dir", str(data),
         "--port", str(port), "--advertise", HOST],
        env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    cm, cs = f"http://{HOST}:{port}", f"http://{HOST}:{port + 1}"
    try:
        wait_until_up(f"{cm}/ping", proc=stack)
        with pytest.raises(requests.ConnectionError):  # listening on the advertised address only
            requests.get(f"http://127.0.0.1:{port}/ping", timeout=2)
        run_env = walkthrough_env(tmp_path, CS=cs, CM=cm, GIT_HOST=f"{HOST}:{port + 2}",
                                  DATA_DIR=str(data), TMPDIR=str(tmp))
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", walkthrough()],
                                cwd=tmp_path, env=run_env, capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 0, result.stderr + result.stdout
        password = (data / "config-store/admin-password").read_text().strip()
        listed = requests.get(f"{cm}/v1/cluster", auth=("admin", password), timeout=10)
        [cluster] = listed.json()["clusters"]
        issued = requests.post(f"{cm}/v1/cluster/{cluster['uuid']}/bootstrap-url",
                               auth=("admin", password), timeout=10)
        openapi = yaml.safe_load(requests.get(f"{cm}/openapi.yaml", timeout=10).text)
        store_openapi = yaml.safe_load(requests.get(f"{cs}/openapi.yaml", timeout=10).text)
    finally:
        os.killpg(stack.pid, signal.SIGTERM)
        out, err = stack.communicate(timeout=30)
    [work] = tmp.iterdir()
    script = (work / "bootstrap.sh").read_text()
    repo = _files(work / "line-1")
    config_maps = [text for path, text in repo.items() if "CONFIG_STORE_URL" in text]
    self_link = [text for path, text in repo.items() if path.name == "self-link.yaml"]
    assert config_maps and self_link
    assert f"{HOST}:{port + 1}" in config_maps[0]  # the Config Store URL edges get
    assert f"http://{HOST}:{port + 2}/" in self_link[0]  # the Git URL Flux pulls from
    assert f"http://{HOST}:{port + 2}/" in script
    for name, text in [("script", script), *((str(p), t) for p, t in repo.items())]:
        assert "127.0.0.1" not in text and "localhost" not in text, name
    assert issued.ok and issued.json().startswith(f"{cm}/v1/cluster/")
    assert "loopback" in issued.headers["Warning"]  # 127.0.0.2 is loopback too
    assert "plain HTTP" in issued.headers["Warning"]
    assert openapi["servers"] == [{"url": cm}]
    assert store_openapi["servers"] == [{"url": cs}]
    assert err.count(f"edges will be given {HOST}, a loopback address") == 1, err
    assert f"Cluster Manager {cm}" in out


@pytest.mark.parametrize("argv", [["--advertise", "http://manager:8700/"],
                                  ["--advertise", "bad host"],
                                  ["--advertise", "10.0.0.5", "--listen", "10.0.0.5:80"]])
def test_up_refuses_an_address_that_is_not_a_host(tmp_path: Path, argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "fplus.cluster_manager.cli", "up", "--data-dir",
                           str(tmp_path / "data"), *argv],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("cluster-manager up: ") and "is not a host name or an IP" in line
    assert not (tmp_path / "data").exists()
