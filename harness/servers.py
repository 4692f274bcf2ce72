"""Real services in subprocesses: free loopback ports, temp dirs, cleanup by PID."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from fplus.cluster_manager.reconcile.seeding import seed_with_account
from fplus.config_store.client import ConfigStoreClient
from fplus.git_server.seeding import seed as git_server_seed

ADMIN_PASSWORD = "test-admin-password"  # noqa: S105  (the throwaway services' admin)
SUITE_SETTINGS = ("FPLUS_ARGON2_PROFILE",)
"""FPLUS_* settings a test suite sets for every service it starts (tests/conftest.py): kept by
:func:`plain_env`, which drops the others (credentials, URLs)."""


def plain_env() -> dict[str, str]:
    """Our environment without FPLUS_* credentials or URLs (but the suite's settings)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("FPLUS_") or k in SUITE_SETTINGS}


def wait_until_up(url: str, timeout: float = 60.0,
                  proc: subprocess.Popen | None = None) -> None:
    """Poll ``url`` until it answers 2xx; fail at once if ``proc`` exits meanwhile."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode} before {url} came up")
        try:
            if requests.get(url, timeout=1).ok:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def free_port_block(size: int) -> int:
    """A port P with P..P+size-1 all free on 127.0.0.1 (for ``cluster-manager up``)."""
    for _ in range(100):
        base = free_port()
        sockets = []
        try:
            for port in range(base, base + size):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError(f"no {size} consecutive free ports")


def start_all_in_one(data_dir: Path, port: int, **popen: Any) -> subprocess.Popen:
    """``cluster-manager up`` in its own process group, without FPLUS_ADMIN_PASSWORD set."""
    env = {k: v for k, v in os.environ.items() if k != "FPLUS_ADMIN_PASSWORD"}
    return subprocess.Popen([sys.executable, "-m", "fplus.cluster_manager.cli", "up", "--data-dir",
                             str(data_dir), "--port", str(port)],
                            env=env, start_new_session=True, **popen)


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children(pid: int) -> list[int]:
    """The PIDs whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


@contextlib.contextmanager
def taken_port(port: int = 0) -> Iterator[int]:
    """A port on 127.0.0.1 (``port``, or any free one) held by a listening socket meanwhile."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        yield s.getsockname()[1]


def run_command(module: str, *args: str, env: dict[str, str] | None = None,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` to completion, its output captured as text.

    ``env`` defaults to ours without any FPLUS_* variable (no credentials).
    """
    if env is None:
        env = plain_env()
    return subprocess.run([sys.executable, "-m", module, *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


@dataclass
class ServiceProcess:
    """One of our ``<command> serve`` subprocesses in its own process group."""

    data_dir: Path
    port: int = 0
    """0: a free port, chosen at start (and chosen again if another process takes it first)."""
    proc: subprocess.Popen | None = None
    extra_args: tuple[str, ...] = ()
    admin_password: str | None = ADMIN_PASSWORD
    module: str = "fplus.config_store.cli"
    log_level: str = "WARNING"
    seed_from: str | None = None
    """A Config Store URL: run the service's ``seed`` step there first, as its admin, and
    serve with the service's own credentials only (no FPLUS_* variable)."""
    settings: dict[str, str] = field(default_factory=dict)
    """Environment variables the service gets on top (e.g. ``FPLUS_HTTP_*`` limits)."""
    start_timeout: float = 30.0
    """Seconds the started process may take to answer ``/ping``."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServiceProcess:
        env = dict(os.environ, LOG_LEVEL=self.log_level)
        env.pop("FPLUS_ADMIN_PASSWORD", None)
        if self.admin_password is not None:
            env["FPLUS_ADMIN_PASSWORD"] = self.admin_password
        if self.seed_from is not None:
            seed_service(self.module, self.data_dir, self.seed_from)
            env = {k: v for k, v in env.items()
                   if not k.startswith("FPLUS_") or k in SUITE_SETTINGS}
        env |= self.settings
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        # A free port found now may be taken by another process before the server binds it
        # (other test sessions run on the machine): then a port of our choosing is chosen again.
        ours = self.port == 0
        for attempt in range(5):
            if ours:
                self.port = free_port()
            if self._launch(env):
                return self
            if not (ours and self._port_was_taken()) or attempt == 4:
                code = self.proc.returncode if self.proc is not None else None
                raise RuntimeError(f"{self.module} exited with {code}")
        raise AssertionError("unreachable")

    def _log_path(self) -> Path:
        name = self.module.removesuffix(".cli").rpartition(".")[2]
        return self.data_dir.parent / f"{name}-{self.port}.log"

    def _launch(self, env: dict[str, str]) -> bool:
        """Start the process and wait for ``/ping``: True once it answers, False if it exited
        (RuntimeError if it neither answers nor exits in ``start_timeout`` s)."""
        with open(self._log_path(), "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", self.module, "serve", "--data-dir",
                 str(self.data_dir), "--port", str(self.port), *self.extra_args],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                if requests.get(self.url + "/ping", timeout=1).ok:
                    return True
            except (requests.ConnectionError, requests.Timeout):  # a busy machine: again
                time.sleep(0.05)
        self.stop()  # never leave a half-started server behind
        raise RuntimeError(f"{self.module} did not start")

    def _port_was_taken(self) -> bool:
        """The exited server said its port is in use (``fplus.serving.http.ports``' message)."""
        try:
            return "is already in use" in self._log_path().read_text(errors="replace")
        except OSError:
            return False

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Signal the server's process group (gunicorn master and worker) and reap it."""
        self.signal(sig)
        self.reap()

    def signal(self, sig: int = signal.SIGTERM) -> None:
        """Signal the server's process group without waiting (``reap`` waits)."""
        if self.proc and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def reap(self, timeout: float = 10) -> None:
        """Wait for a signalled server to exit (SIGKILL after ``timeout`` s), then SIGKILL
        what is left of its process group."""
        if self.proc and self.proc.poll() is None:
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.proc:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)  # stragglers of a killed master
        self.proc = None

    def worker_pid(self) -> int | None:
        """The gunicorn worker serving now (the master's only child), None between two."""
        assert self.proc is not None
        found = children(self.proc.pid)
        return found[0] if len(found) == 1 else None

    def kill_worker(self, timeout: float = 30) -> int:
        """SIGKILL the gunicorn worker, as the OOM killer would, and wait until the master's
        new one answers ``/ping``; returns the new worker's PID."""
        old = self.worker_pid()
        assert old is not None, "no worker to kill"
        os.kill(old, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None and self.proc.poll() is None, "the master exited"
            new = self.worker_pid()
            if new not in (None, old):
                with contextlib.suppress(requests.ConnectionError):
                    if requests.get(self.url + "/ping", timeout=5).ok:
                        return new
            time.sleep(0.05)
        raise RuntimeError(f"{self.module}: no new worker answered within {timeout:g} s")


ConfigStoreProcess = ServiceProcess


def stop_all(services: Iterable[ServiceProcess], sig: int = signal.SIGTERM) -> None:
    """Stop several servers at once: signal every one, then reap each (each still gets its
    graceful timeout, but they run out together rather than one after another)."""
    services = list(services)
    for service in services:
        service.signal(sig)
    for service in services:
        service.reap()


def seed_service(module: str, data_dir: Path, config_store_url: str) -> None:
    """``<module> seed`` against a Config Store as its admin: the service's setup, its own
    principal, and that principal's password file in ``data_dir``.

    Over plain HTTP the seed step runs in this process (the same function the ``seed``
    command calls; a new interpreter per service would cost about a CPU-second a stack);
    the ``seed`` commands themselves are tested in tests/test_startup.py. Over HTTPS it
    runs as the command, which takes the client CA from the environment."""
    seed = IN_PROCESS_SEEDS.get(module)
    if seed is not None and config_store_url.startswith("http://"):
        with ConfigStoreClient(config_store_url, "admin", ADMIN_PASSWORD) as admin:
            admin.connect(wait=5.0)
            seed(admin, data_dir)
        return
    done = run_command(module, "seed", "--data-dir", str(data_dir),
                       "--config-store", config_store_url,
                       env=admin_env(config_store_url))
    if done.returncode != 0:
        raise RuntimeError(f"{module} seed failed: {done.stderr.strip()}")


IN_PROCESS_SEEDS: dict[str, Callable[[ConfigStoreClient, Path], Path]] = {
    "fplus.git_server.cli": git_server_seed,
    "fplus.cluster_manager.cli": seed_with_account,
}
"""The function each service's ``seed`` command runs, by the module serving it."""


def admin_env(config_store_url: str) -> dict[str, str]:
    """Our environment with the throwaway Config Store's admin credentials (for ``seed``)."""
    env = plain_env()
    return env | {"FPLUS_USER": "admin", "FPLUS_PASSWORD": ADMIN_PASSWORD,
                  "CONFIG_STORE_URL": config_store_url}


def git_server_process(data_dir: Path, config_store_url: str) -> ServiceProcess:
    """A ``git-server serve`` against a Config Store, seeded there first and running as its
    own principal."""
    return ServiceProcess(data_dir, module="fplus.git_server.cli", admin_password=None,
                          seed_from=config_store_url,
                          extra_args=("--config-store", config_store_url,
                                      "--acl-cache-seconds", "0.5"))


class Api(requests.Session):
    """A requests session bound to a base URL (``api.get("/v2/object")``)."""

    def __init__(self, base: str, auth: tuple[str, str] | None = None) -> None:
        super().__init__()
        self.base = base
        self.auth = auth

    def request(self, method, url, *args, **kwargs):
        kwargs.setdefault("timeout", 10)
        return super().request(method, self.base + url, *args, **kwargs)


def cluster_manager_process(data_dir: Path, config_store_url: str, git_url: str,
                            git_repos: Path, *extra: str) -> ServiceProcess:
    """A ``cluster-manager serve`` writing straight into a local Git server's repos, seeded
    first and running as its own principal."""
    return ServiceProcess(data_dir, module="fplus.cluster_manager.cli", admin_password=None,
                          seed_from=config_store_url,
                          extra_args=("--config-store", config_store_url, "--git", git_url,
                                      "--git-repos", str(git_repos), "--backoff", "0.5",
                                      *extra))


class ThreadSessions:
    """One keep-alive admin session per thread against a service; all closed together."""

    def __init__(self, base: str) -> None:
        self.base = base
        self._local = threading.local()
        self._sessions: list[Api] = []
        self._lock = threading.Lock()

    @property
    def api(self) -> Api:
        """This thread's session."""
        api: Api | None = getattr(self._local, "api", None)
        if api is None:
            api = self._local.api = Api(self.base, ("admin", ADMIN_PASSWORD))
            with self._lock:
                self._sessions.append(api)
        return api

    def close(self) -> None:
        """Close every session opened so far."""
        with self._lock:
            for api in self._sessions:
                api.close()
            self._sessions.clear()
