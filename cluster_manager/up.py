"""``cluster-manager up``: the all-in-one stack on one machine, for trying it out.

Starts the Cluster Manager on P, the Config Store on P+1 and the Git server on P+2
(127.0.0.1) as child processes
in their own process groups, waits for each to answer ``/ping``, prints how to use them,
and stops them all on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import requests


@dataclass
class Child:
    """A service child process."""

    name: str
    module: str
    port: int
    args: list[str]
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, env: dict[str, str]) -> None:
        """Start the child with ``env`` in its own process group."""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", self.module, "serve", "--port", str(self.port), *self.args],
            env=env, start_new_session=True)

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until ``/ping`` answers; exit if the child dies or never answers."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise SystemExit(f"{self.name} exited with status {self.proc.returncode}")
            try:
                if requests.get(self.url + "/ping", timeout=1).ok:
                    return
            except requests.ConnectionError:
                time.sleep(0.1)
        raise SystemExit(f"{self.name} did not start within {timeout:.0f} s")

    def stop(self) -> None:
        """SIGTERM the child's process group (SIGKILL after 10 s)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)


def _admin_password(data_dir: Path) -> str:
    """``FPLUS_ADMIN_PASSWORD``, or the one the Config Store generated into its data dir."""
    if os.environ.get("FPLUS_ADMIN_PASSWORD"):
        return os.environ["FPLUS_ADMIN_PASSWORD"]
    return (data_dir / "config-store" / "admin-password").read_text().strip()


def up(data_dir: Path, port: int) -> None:
    """Run the stack until interrupted."""
    data_dir = data_dir.resolve()
    store = Child("Config Store", "config_store.cli", port + 1,
                  ["--data-dir", str(data_dir / "config-store")])
    git = Child("Git server", "git_server.cli", port + 2,
                ["--data-dir", str(data_dir / "git"), "--config-store", store.url])
    manager = Child("Cluster Manager", "cluster_manager.cli", port,
                    ["--data-dir", str(data_dir / "cluster-manager"), "--config-store", store.url,
                     "--git", git.url, "--git-repos", str(data_dir / "git" / "repos")])
    children = [store, git, manager]
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        store.start(dict(os.environ))
        store.wait_ready()
        services_env = dict(os.environ, FPLUS_USER="admin",
                            FPLUS_PASSWORD=_admin_password(data_dir))
        for child in (git, manager):
            child.start(services_env)
            child.wait_ready()
        _print_walkthrough(manager.url, store.url, git.url, data_dir)
        while not stop and all(c.proc and c.proc.poll() is None for c in children):
            time.sleep(0.5)
    finally:
        for child in reversed(children):
            child.stop()


def _print_walkthrough(manager_url: str, store_url: str, git_url: str, data_dir: Path) -> None:
    secret = ("$FPLUS_ADMIN_PASSWORD" if os.environ.get("FPLUS_ADMIN_PASSWORD")
              else f"$(cat {data_dir / 'config-store' / 'admin-password'})")
    print(f"""
Up:  Cluster Manager {manager_url}
     Config Store  {store_url}   (API: {store_url}/openapi.yaml)
     Git server    {git_url}
     data          {data_dir}
Root principal: admin, password {secret}
Try:
  curl -u "admin:{secret}" {store_url}/v2/app
  curl -u "admin:{secret}" {git_url}/v1/status
Ctrl-C stops everything.
""", flush=True)
