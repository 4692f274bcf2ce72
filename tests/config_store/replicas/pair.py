"""Config Store replicas on one PostgreSQL database, and waiting for them with a deadline."""

from __future__ import annotations

import signal
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from harness.servers import (
    ADMIN_PASSWORD,
    Api,
    ConfigStoreProcess,
    free_port,
    plain_env,
    run_command,
)

T = TypeVar("T")

DEADLINE = 15.0
"""How long a change made through one replica may take to reach another (never asserted as
a timing: only a bound for waiting)."""


def eventually(probe: Callable[[], T], what: str, timeout: float = DEADLINE,
               interval: float = 0.05) -> T:
    """Call ``probe`` until it returns something truthy, and return that; AssertionError
    naming ``what`` (and the last result) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s (last: {last!r})")
        time.sleep(interval)


def known_to(api: Api, *objs: str) -> None:
    """Wait until the replica behind ``api`` has learnt of ``objs`` (made through another)."""
    for obj in objs:
        eventually(lambda o=obj: api.get(f"/v2/object/{o}").status_code == 200,
                   f"{obj} known to {api.base}")


def replica(data_dir: Path, database: str, port: int | None = None) -> ConfigStoreProcess:
    """A ``config-store serve`` on ``database`` (not started), with the shared admin password."""
    return ConfigStoreProcess(data_dir, port=port or free_port(),
                              extra_args=("--database", database))


def refusal(tmp_path: Path, database: str) -> str:
    """Run ``config-store serve`` on ``database``, which it must refuse: it exits non-zero
    with one line, naming the URL without its password; that line."""
    env = plain_env()
    done = run_command("fplus.config_store.cli", "serve", "--data-dir", str(tmp_path / "refused"),
                       "--port", "0", "--database", database,
                       env=env | {"FPLUS_ADMIN_PASSWORD": ADMIN_PASSWORD})
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and len(lines) == 1, (done.returncode, done.stderr)
    url = urllib.parse.urlsplit(database)
    assert f"{url.username}:***@{url.hostname}:{url.port}{url.path}" in lines[0], lines[0]
    assert not url.password or url.password not in done.stderr + done.stdout, "password shown"
    return lines[0]


def start_all(procs: list[ConfigStoreProcess]) -> list[ConfigStoreProcess]:
    """Start every process at once; all are stopped again if one fails to come up."""
    errors: list[BaseException] = []

    def run(proc: ConfigStoreProcess) -> None:
        try:
            proc.start()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(p,)) for p in procs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for proc in procs:
            proc.stop()
        raise errors[0]
    return procs


@dataclass
class Replicas:
    """``config-store serve`` processes sharing one database, each with its own data dir."""

    database: str
    root: Path
    procs: list[ConfigStoreProcess] = field(default_factory=list)

    @classmethod
    def start(cls, root: Path, database: str, count: int = 2) -> Replicas:
        """Start ``count`` replicas one after the other (the first one migrates)."""
        self = cls(database, root)
        try:
            for i in range(count):
                self.procs.append(replica(root / f"r{i}", database).start())
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def a(self) -> ConfigStoreProcess:
        return self.procs[0]

    @property
    def b(self) -> ConfigStoreProcess:
        return self.procs[1]

    def admin(self, i: int) -> Api:
        """A session of the root principal on replica ``i``."""
        return Api(self.procs[i].url, ("admin", ADMIN_PASSWORD))

    def stop_one(self, i: int, sig: int = signal.SIGTERM) -> None:
        """Stop replica ``i`` (``SIGKILL``: as a crash would)."""
        self.procs[i].stop(sig)

    def start_one(self, i: int) -> ConfigStoreProcess:
        """Start replica ``i`` again on its data dir and port."""
        old = self.procs[i]
        self.procs[i] = replica(old.data_dir, self.database, old.port).start()
        return self.procs[i]

    def restart(self) -> None:
        """Stop every replica, then start them all again on their data dirs and ports."""
        self.stop()
        self.procs = start_all([replica(p.data_dir, self.database, p.port) for p in self.procs])

    def stop(self) -> None:
        """Stop every replica (at once: each takes a while to shut down)."""
        threads = [threading.Thread(target=proc.stop) for proc in self.procs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
