"""Stacks for the backup tests: the commands run as an operator would, a fresh target where
the old stack was reached, and what a restore writes (which a refused one leaves alone)."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from harness.gitcli import bare
from harness.servers import (
    ServiceProcess,
    admin_env,
    cluster_manager_process,
    git_server_process,
    run_command,
    stop_all,
)
from harness.stack import Stack
from tests.cluster_manager.escrow.conftest import INTERVAL


def cli(command: str, stack: Stack, *args: str,
        key: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``cluster-manager backup|restore`` against ``stack``, authenticated with the escrow
    key file ``key`` (env ``FPLUS_SECRET_ESCROW``, as the stack's Cluster Manager runs)."""
    env = admin_env(stack.store.url) | ({"FPLUS_SECRET_ESCROW": str(key)} if key else {})
    return run_command("fplus.cluster_manager.cli", command, *args, "--config-store",
                       stack.store.url, "--data-dir", str(stack.root / "cm"), "--git-repos",
                       str(stack.repos), env=env, timeout=120)


def state(stack: Stack) -> tuple[Any, ...]:
    """What a restore writes, which a refused one must leave as it was: the objects, the
    Auth dump, the repos with their refs and the Cluster Manager's table rows (not the
    entries the running Cluster Manager keeps updating)."""
    objects = stack.admin.get("/v2/dump?service=configdb").json()["objects"]
    repos = {p.name: bare(p, "for-each-ref") for p in sorted(stack.repos.iterdir())}
    with sqlite3.connect(stack.root / "cm" / "bootstrap-tokens.sqlite", timeout=10) as db:
        rows = [db.execute(f"SELECT {columns} FROM {table}").fetchall()
                for table, columns in (("cm_sealing_keys", "cluster, fingerprint"),
                                       ("cm_sealed_keys", "cluster, namespace, name, "
                                                          "secret_key"))]
    return objects, stack.admin.get("/v2/dump?service=auth").json(), repos, rows


def fresh_stack(root: Path, old: Stack, key: Path) -> Stack:
    """A new stack in ``root`` where ``old`` was reached (the Config Store's, the Git
    server's and the Cluster Manager's ports: the URLs its clusters' repos name), with
    escrow on from ``key``."""
    store = ServiceProcess(root / "cs", port=old.store.port).start()
    git_server = git_server_process(root / "git", store.url)
    git_server.port = old.git.port
    try:
        git_server.start()
        manager = cluster_manager_process(root / "cm", store.url, git_server.url,
                                          root / "git" / "repos", "--secret-escrow",
                                          str(key))
        manager.port = old.manager.port
        manager.start()
    except BaseException:
        stop_all((git_server, store))
        raise
    return Stack(root, store, git_server, manager)


def restart_manager(stack: Stack, key: Path) -> None:
    """(Re)start the stack's Cluster Manager with escrow on, from the key file ``key``."""
    port = stack.manager.port  # its URL is in the clusters' repos (Edge Sync's tunnel)
    stack.manager.stop()
    stack.manager = cluster_manager_process(
        stack.root / "cm", stack.store.url, stack.git.url, stack.repos, "--secret-escrow",
        str(key), "--reseal-interval", str(INTERVAL))
    stack.manager.port = port
    stack.manager.start()
