"""Backup and restore with ``cluster-manager up``, exactly as docs/deploy.md tells an
operator: a backup of the running stack, a new data dir holding the escrow key kept apart,
one ``up`` to seed it, the restore with the Config Store and the Git server started by hand,
and ``up`` again: the cluster is Ready at the commit it had."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from harness.gitcli import bare
from harness.servers import (
    ServiceProcess,
    free_port_block,
    plain_env,
    run_command,
    start_all_in_one,
    stop_all,
    wait_until_up,
)
from harness.stack import wait_for

pytestmark = pytest.mark.slow  # the whole documented procedure, about 40 s: `make test-slow`

@contextmanager
def _up(data: Path, port: int) -> Iterator[tuple[str, str]]:
    """``cluster-manager up`` until the block ends; its Cluster Manager's URL and the admin
    password."""
    proc = start_all_in_one(data, port, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_up(f"http://127.0.0.1:{port}/ping", proc=proc)
        yield (f"http://127.0.0.1:{port}",
               (data / "config-store" / "admin-password").read_text().strip())
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def _cli(command: str, data: Path, port: int, password: str,
         *args: str) -> subprocess.CompletedProcess[str]:
    env = plain_env()
    return run_command("fplus.cluster_manager.cli", command, *args, "--config-store",
                       f"http://127.0.0.1:{port + 1}", "--data-dir",
                       str(data / "cluster-manager"), "--git-repos", str(data / "git/repos"),
                       env=env | {"FPLUS_USER": "admin", "FPLUS_PASSWORD": password},
                       timeout=120)


def _ready(url: str, password: str, cluster: str) -> bool:
    r = requests.get(f"{url}/v1/cluster/{cluster}/status", auth=("admin", password),
                     timeout=5)
    return r.ok and r.json()["phase"] == "Ready"


def test_backup_and_restore_with_up(tmp_path: Path) -> None:
    port, old, new = free_port_block(3), tmp_path / "old", tmp_path / "new"
    with _up(old, port) as (url, password):
        r = requests.post(f"{url}/v1/cluster", auth=("admin", password), timeout=10,
                          json={"name": "local-one", "namespace": "fplus-edge"})
        assert r.status_code == 201, r.text
        cluster = r.json()["uuid"]
        wait_for(lambda: _ready(url, password, cluster), 60, "local-one Ready")
        head = bare(old / f"git/repos/{cluster}.git", "rev-parse", "main").strip()
        done = _cli("backup", old, port, password, "--out", str(tmp_path / "backup"))
        assert done.returncode == 0, done.stderr
    kept = tmp_path / "escrow.key"
    shutil.copy(old / "cluster-manager/escrow.key", kept)
    shutil.rmtree(old)

    (new / "cluster-manager").mkdir(parents=True)
    shutil.copy(kept, new / "cluster-manager/escrow.key")  # before the first up
    with _up(new, port):
        pass  # seeds the new stack
    store = ServiceProcess(new / "config-store", port=port + 1, admin_password=None)
    git = ServiceProcess(new / "git", port=port + 2, admin_password=None,
                         module="fplus.git_server.cli",
                         extra_args=("--config-store", f"http://127.0.0.1:{port + 1}"))
    try:
        store.start()
        git.start()
        password = (new / "config-store/admin-password").read_text().strip()
        done = _cli("restore", new, port, password, str(tmp_path / "backup"))
        assert done.returncode == 0, done.stderr
    finally:
        stop_all((git, store))
    with _up(new, port) as (url, password):
        wait_for(lambda: _ready(url, password, cluster), 60, "local-one Ready again")
        assert bare(new / f"git/repos/{cluster}.git", "rev-parse", "main").strip() == head
