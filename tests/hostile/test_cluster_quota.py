"""Many clusters created by one principal: a per-principal quota (``--cluster-quota``).

Not reached by the probe: an operator holding Edge.Perm.Clusters could create clusters
without end, each one an object, entries, a Git repo and two accounts. Now each principal
may hold ``--cluster-quota`` clusters it created (default 1000; the root principal is
exempt); one more answers 429 naming the quota and writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from fplus.cluster_manager.name_claims import APP as CLAIMS
from fplus.cluster_manager.name_claims import claim_object
from fplus.config_store import uuids
from harness.servers import (
    ADMIN_PASSWORD,
    Api,
    ConfigStoreProcess,
    ServiceProcess,
    cluster_manager_process,
    git_server_process,
)
from harness.stack import CONFIG, wait_for
from tests.conftest import grant, make_user

QUOTA = 3


@dataclass
class Services:
    store: ConfigStoreProcess
    manager: ServiceProcess

    @property
    def admin(self) -> Api:
        return Api(self.store.url, ("admin", ADMIN_PASSWORD))

    def operator(self) -> Api:
        """A new principal with Edge.Perm.Clusters, as a Cluster Manager session."""
        principal, user = make_user(self.admin)
        grant(self.admin, principal, uuids.EdgePerm.Clusters, uuids.NULL)
        return Api(self.manager.url, user.auth)


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    root = tmp_path_factory.mktemp("quota")
    store = ConfigStoreProcess(root / "cs").start()
    started: list[ServiceProcess] = [store]
    try:
        git = git_server_process(root / "git", store.url).start()
        started.append(git)
        started.append(cluster_manager_process(root / "cm", store.url, git.url,
                                               root / "git" / "repos",
                                               "--cluster-quota", str(QUOTA)).start())
        yield Services(store, started[-1])
    finally:
        for process in reversed(started):
            process.stop()


def claim_of(admin: Api, name: str) -> dict | None:
    """The claim entry of a cluster name, or None."""
    r = admin.get(f"/v2/app/{CLAIMS}/object/{claim_object(name)}")
    return r.json() if r.status_code == 200 else None


def create(api: Api, name: str) -> tuple[int, dict]:
    r = api.post("/v1/cluster", json={"name": name, "namespace": "fplus-edge"}, timeout=30)
    return r.status_code, r.json()


def test_one_principal_creates_at_most_its_quota(services: Services) -> None:
    operator = services.operator()
    made = []
    for i in range(QUOTA):
        code, body = create(operator, f"quota-{i}")
        assert code == 201, body
        made.append(body["uuid"])
    configured = set(services.admin.get(f"/v2/app/{CONFIG}/object").json())
    code, body = create(operator, "quota-over")
    assert code == 429, body
    assert body["error"] == ("cluster quota reached: a principal may create at most "
                             f"{QUOTA} clusters (delete one first)")
    # Nothing written: no configuration entry, no name claim.
    assert set(services.admin.get(f"/v2/app/{CONFIG}/object").json()) == configured
    assert claim_of(services.admin, "quota-over") is None

    # Another principal has its own allowance; the root principal has none.
    assert create(services.operator(), "quota-other")[0] == 201
    root = Api(services.manager.url, ("admin", ADMIN_PASSWORD))
    for i in range(QUOTA + 1):
        assert create(root, f"quota-root-{i}")[0] == 201

    # A deleted cluster gives its place back once torn down.
    r = operator.delete(f"/v1/cluster/{made[0]}?force=true")
    assert r.status_code in (202, 204), r.text
    wait_for(lambda: claim_of(services.admin, "quota-0") is None, 60, "the teardown")
    assert create(operator, "quota-again")[0] == 201


def test_many_tokens_of_one_principal_share_its_quota(services: Services) -> None:
    operator = services.operator()
    base = Api(services.store.url, operator.auth)
    for i in range(QUOTA + 1):
        r = base.post("/token", timeout=10)
        assert r.status_code == 200, r.text
        session = Api(services.manager.url)
        session.headers["Authorization"] = f"Bearer {r.json()['token']}"
        code, body = create(session, f"tokens-{i}")
        assert code == (201 if i < QUOTA else 429), body
