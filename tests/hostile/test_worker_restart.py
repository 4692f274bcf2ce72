"""A gunicorn worker killed (OOM killer, crash, ``kill -9``) comes back serving what the
database holds, not what the master process knew at start-up.

The probe deleted a grant after start, killed the Config Store's worker, and the clone it
had refused was served again; on a fresh stack everything created since start (the services'
own principals and grants, the cluster configuration app) was gone until a full restart.
Each test changes state after its services started, kills a worker with SIGKILL, waits for
gunicorn's new one, and checks what is served.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ServiceProcess, git_server_process
from harness.stack import CONFIG, Stack, create_cluster, start_stack, status, wait_for
from tests.conftest import grant, make_class, make_object, make_user
from tests.git_server.conftest import make_repo

ADMIN = ("admin", ADMIN_PASSWORD)
P = uuids.ConfigDBPerm


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ServiceProcess]:
    """A Config Store of this test's own."""
    server = ServiceProcess(tmp_path / "cs").start()
    yield server
    server.stop()


def _grants_of(admin: Api, principal: str) -> list[str]:
    r = admin.post("/v2/grant/find", json={"principal": principal})
    assert r.status_code == 200, r.text
    return sorted(r.json())


def _entry(api: Api, app: str, obj: str) -> requests.Response:
    return api.get(f"/v2/app/{app}/object/{obj}")


def _put(admin: Api, app: str, obj: str, value: object) -> None:
    r = admin.put(f"/v2/app/{app}/object/{obj}", json=value)
    assert r.status_code in (201, 204), r.text


def test_a_config_store_worker_comes_back_with_the_database_state(store: ServiceProcess) -> None:
    admin = Api(store.url, ADMIN)
    revoked_app, kept_app = make_object(admin, uuids.Class.App), make_object(admin,
                                                                            uuids.Class.App)
    old = make_object(admin, make_class(admin))
    _put(admin, revoked_app, old, {"app": "revoked"})
    _put(admin, kept_app, old, {"app": "kept"})
    user, as_user = make_user(admin)
    revoked = grant(admin, user, P.ReadApp, revoked_app)
    kept = grant(admin, user, P.ReadApp, kept_app)
    store.stop()  # the grants are now part of what the next start loads
    store.start()

    assert admin.delete(f"/v2/grant/{revoked}").status_code == 204
    new = make_object(admin, make_class(admin))  # objects, an entry, a principal since start
    _put(admin, kept_app, new, {"made": "after start"})
    newcomer, as_newcomer = make_user(admin)
    added = grant(admin, newcomer, P.ReadApp, kept_app)
    assert _entry(as_user, revoked_app, old).status_code == 403
    store.kill_worker()

    assert _grants_of(admin, user) == [kept]
    assert _grants_of(admin, newcomer) == [added]
    assert _entry(as_user, revoked_app, old).status_code == 403
    assert _entry(as_user, kept_app, old).json() == {"app": "kept"}
    assert admin.get(f"/v2/object/{new}").status_code == 200
    assert _entry(as_newcomer, kept_app, new).json() == {"made": "after start"}
    assert admin.delete(f"/v2/grant/{kept}").status_code == 204  # and it writes on
    assert _entry(as_user, kept_app, old).status_code == 403


def _refs(git_url: str, repo: str, auth: tuple[str, str]) -> int:
    """The status of a clone's first request for ``repo``."""
    return requests.get(f"{git_url}/uuid/{repo}/info/refs?service=git-upload-pack",
                        auth=auth, timeout=10).status_code


def test_the_git_server_follows_grants_and_repos_across_worker_restarts(
        store: ServiceProcess, tmp_path: Path) -> None:
    """A repo configured and granted since start is served, one whose grant was removed is
    refused (403), after the Git server's worker restarts and after the store's does (the
    Git server's own principal was made since the store started)."""
    git = git_server_process(tmp_path / "git", store.url).start()  # seeded after the store
    try:
        admin = Api(store.url, ADMIN)
        refused, served = make_repo(admin), make_repo(admin)
        users = []  # one per restart, never seen by the Git server before (nothing cached)
        for _ in range(2):
            user, as_user = make_user(admin)
            assert as_user.auth is not None
            users.append(as_user.auth)
            pull = grant(admin, user, uuids.GitPerm.Pull, refused.uuid)
            assert admin.delete(f"/v2/grant/{pull}").status_code == 204
            grant(admin, user, uuids.GitPerm.Pull, served.uuid)

        for restarted, auth in zip((git, store), users, strict=True):
            restarted.kill_worker()
            wait_for(lambda a=auth: _refs(git.url, served.uuid, a) == 200, timeout=15,
                     what=f"the repo made after start served after {restarted.module}")
            assert _refs(git.url, refused.uuid, auth) == 403
    finally:
        git.stop()


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    """A fresh stack: the Git server and the Cluster Manager are seeded after the store
    started, so their principals and apps are state made since its start."""
    running = start_stack(tmp_path)
    yield running
    running.stop()


def _commissioned(stack: Stack, name: str) -> str:
    cluster = create_cluster(stack.admin, name)
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), timeout=60,
             what=f"{name} commissioned")
    return cluster


def test_the_cluster_manager_commissions_after_worker_restarts(stack: Stack) -> None:
    """A new cluster is commissioned after the Cluster Manager's worker restarts, and after
    the store's (the manager's principal, grants and cluster apps were made since the store
    started); the clusters made before stay served."""
    first = _commissioned(stack, "restart-first")
    manager = Api(stack.manager.url, ADMIN)
    for step, restarted in enumerate((stack.manager, stack.store)):
        restarted.kill_worker()
        _commissioned(stack, f"restart-{step}")
        assert stack.admin.get(f"/v2/app/{CONFIG}/object/{first}").status_code == 200
        assert manager.get(f"/v1/cluster/{first}/status").status_code == 200
