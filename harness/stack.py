"""The whole stack behind the Cluster Manager: Config Store, Git server, Cluster Manager."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fplus.config_store import uuids
from harness.servers import (
    ADMIN_PASSWORD,
    Api,
    ServiceProcess,
    cluster_manager_process,
    git_server_process,
    stop_all,
)

CONFIG = uuids.App.EdgeClusterConfiguration
STATUS = uuids.App.EdgeClusterSetupStatus


@dataclass
class Stack:
    """Running services and an admin session."""

    root: Path
    store: ServiceProcess
    git: ServiceProcess
    manager: ServiceProcess

    @property
    def admin(self) -> Api:
        return Api(self.store.url, ("admin", ADMIN_PASSWORD))

    @property
    def repos(self) -> Path:
        return self.root / "git" / "repos"

    def restart_manager(self) -> None:
        self.manager.stop()
        self.manager = cluster_manager_process(self.root / "cm", self.store.url, self.git.url,
                                               self.repos).start()

    def stop(self) -> None:
        """Stop the three services together (signalled in dependency order, then reaped)."""
        stop_all((self.manager, self.git, self.store))


def start_stack(root: Path, extra: tuple[str, ...] = (),
                manager_extra: tuple[str, ...] = ()) -> Stack:
    """Config Store, Git server, then Cluster Manager, each on a free port and given the
    ``extra`` arguments (the Cluster Manager ``manager_extra`` too); if one fails to start,
    those already running are stopped before the error is raised."""
    started: list[Any] = []
    try:
        store = ServiceProcess(root / "cs", extra_args=extra).start()
        started.append(store)
        git = git_server_process(root / "git", store.url)
        git.extra_args += extra
        started.append(git.start())
        manager = cluster_manager_process(root / "cm", store.url, git.url,
                                          root / "git" / "repos", *extra,
                                          *manager_extra).start()
    except BaseException:
        stop_all(reversed(started))
        raise
    return Stack(root, store, git, manager)


def create_cluster(admin: Api, name: str, namespace: str = "fplus-edge",
                   **extra: Any) -> str:
    """An Edge cluster object with its configuration entry."""
    r = admin.post("/v2/object", json={"class": uuids.Class.EdgeCluster})
    assert r.status_code == 201, r.text
    cluster = r.json()["uuid"]
    body = {"name": name, "namespace": namespace, **extra}
    r = admin.put(f"/v2/app/{CONFIG}/object/{cluster}", json=body)
    assert r.status_code == 201, r.text
    return cluster


def status(admin: Api, cluster: str) -> dict[str, Any] | None:
    """The cluster's setup status entry, or None."""
    r = admin.get(f"/v2/app/{STATUS}/object/{cluster}")
    return r.json() if r.status_code == 200 else None


def wait_for(check: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60)


def clone_url(stack: Stack, name: str, password: str, cluster: str) -> str:
    user = quote(name, safe="")
    return f"http://{user}:{password}@127.0.0.1:{stack.git.port}/uuid/{cluster}"
