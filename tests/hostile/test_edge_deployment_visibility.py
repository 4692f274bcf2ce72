"""Finding: an edge's Edge Sync account read every cluster's Edge deployments, values included.

Its group held ReadApp on the whole Edge deployment app, so one stolen edge read every site's
configuration (GET of an entry, v1 search, notify WATCH and SEARCH). Now an Edge Sync account
holds ReadApp on the app restricted to its own cluster, and an Edge deployment entry belongs
to the cluster its ``cluster`` field names: the account reads and finds exactly the entries
that name its cluster, whenever they were written, and loses one moved to another cluster.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from fplus.cluster_manager.model.apps_and_roles import SYNC
from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import STATUS, Stack, create_cluster, start_stack, status, wait_for
from tests.cluster_manager.api.test_bootstrap import credentials, new_url
from tests.config_store.notify_helpers import RawNotify, app_parent, entry_url
from tests.conftest import make_object

DEPLOYMENTS = uuids.App.EdgeDeployment
SECRET = "s3cret-of-"


@dataclass(frozen=True)
class Site:
    """A commissioned cluster, its deployment (with a secret in its values) and the Config
    Store as its Edge Sync account."""

    cluster: str
    deployment: str
    sync: Api


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack of this module's own: a test restarts the Cluster Manager."""
    running = start_stack(tmp_path_factory.mktemp("deployment-visibility"))
    yield running
    running.stop()


def deploy(admin: Api, cluster: str, name: str) -> str:
    """An Edge deployment written straight into the Config Store (as ACS's tools do)."""
    deployment = make_object(admin, uuids.Class.EdgeDeployment)
    put(admin, deployment, cluster, name)
    return deployment


def put(admin: Api, deployment: str, cluster: str, name: str) -> None:
    r = admin.put(f"/v2/app/{DEPLOYMENTS}/object/{deployment}",
                  json={"name": name, "cluster": cluster, "chart": uuids.Shared.EdgeClusterChart,
                        "values": {"dbPassword": SECRET + name}})
    assert r.status_code in (201, 204), r.text


def commission(stack: Stack, name: str) -> Site:
    """A ready cluster, then a deployment made for it, and its Edge Sync account from a
    bootstrap script."""
    cluster = create_cluster(stack.admin, name)
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what=f"{name} ready")
    root = Api(stack.manager.url, stack.admin.auth)
    script = Api("").get(new_url(root, cluster))
    assert script.status_code == 200, script.text
    sync = Api(stack.store.url, credentials(script.text)[SYNC.secret])
    return Site(cluster, deploy(stack.admin, cluster, name), sync)


@pytest.fixture(scope="module")
def sites(stack: Stack) -> tuple[Site, Site]:
    return commission(stack, "site-a"), commission(stack, "site-b")


def search(api: Api, **query: str) -> list[str]:
    """The v1 search's answer (the objects whose entries match)."""
    r = api.get(f"/v1/app/{DEPLOYMENTS}/search",
                params={k: json.dumps(v) for k, v in query.items()})
    assert r.status_code == 200, r.text
    return sorted(r.json())


def children(notify: RawNotify, flt: object = None) -> dict[str, dict]:
    """The first answer of a notify SEARCH of the app: its children by object."""
    answer = notify.next(notify.search(app_parent(DEPLOYMENTS), flt))
    assert answer["response"]["status"] == 204, answer
    return answer["children"]


def test_an_edge_reads_only_its_own_clusters_deployments(stack: Stack,
                                                         sites: tuple[Site, Site]) -> None:
    a, b = sites
    for version in ("v1", "v2"):
        theirs = a.sync.get(f"/{version}/app/{DEPLOYMENTS}/object/{b.deployment}")
        assert theirs.status_code == 403, theirs.text
        assert SECRET not in theirs.text
        assert "ReadApp" in theirs.json()["error"]
        mine = a.sync.get(f"/{version}/app/{DEPLOYMENTS}/object/{a.deployment}")
        assert mine.status_code == 200, mine.text
        assert mine.json()["values"] == {"dbPassword": SECRET + "site-a"}

    assert search(a.sync, cluster=b.cluster) == []
    assert search(a.sync) == [a.deployment]
    assert search(a.sync, cluster=a.cluster) == [a.deployment]
    listing = a.sync.get(f"/v2/app/{DEPLOYMENTS}/object")
    assert listing.status_code == 403 and b.deployment not in listing.text

    with RawNotify.login(a.sync) as notify:
        watched = notify.next(notify.watch(entry_url(DEPLOYMENTS, b.deployment)))
        assert watched["response"] == {"status": 403}
        assert children(notify, {"cluster": b.cluster}) == {}
        assert set(children(notify)) == {a.deployment}
        found = children(notify, {"cluster": a.cluster})
        assert set(found) == {a.deployment}
        assert found[a.deployment]["body"]["values"] == {"dbPassword": SECRET + "site-a"}


def test_a_deployment_moved_away_is_lost_to_the_old_edge(stack: Stack,
                                                        sites: tuple[Site, Site]) -> None:
    a, b = sites
    moving = deploy(stack.admin, a.cluster, "moving")
    with RawNotify.login(a.sync) as notify:
        sub = notify.search(app_parent(DEPLOYMENTS), {"cluster": a.cluster})
        first = notify.next(sub)
        assert set(first["children"]) == {a.deployment, moving}
        put(stack.admin, moving, b.cluster, "moving")
        gone = notify.next(sub)
        assert gone["child"] == moving and gone["response"]["status"] in (403, 404, 412), gone
        assert "body" not in gone["response"]
    assert a.sync.get(f"/v2/app/{DEPLOYMENTS}/object/{moving}").status_code == 403
    assert search(a.sync, cluster=a.cluster) == [a.deployment]
    assert search(b.sync, cluster=b.cluster) == sorted([b.deployment, moving])


def test_a_cluster_commissioned_before_gets_its_grant_on_the_next_reconcile(
        stack: Stack, sites: tuple[Site, Site]) -> None:
    """An older stack: the Edge Sync accounts' group read the whole app, and A's account has
    no grant of its own on it. A restart (seed, then reconcile) converges both."""
    a, b = sites
    admin = stack.admin
    service = admin.get(f"/v2/app/{uuids.App.ServiceConfig}/object/"
                        f"{uuids.Service.Clusters}").json()
    group = service["group"]["sync"]["uuid"]
    r = admin.post("/v2/grant", json={"principal": group, "permission": uuids.ConfigDBPerm.ReadApp,
                                      "target": DEPLOYMENTS, "plural": False})
    assert r.status_code in (200, 201), r.text
    account = admin.get(f"/v2/app/{STATUS}/object/{a.cluster}").json()[SYNC.key]["uuid"]
    own = admin.post("/v2/grant/find", json={"principal": account,
                                              "permission": uuids.ConfigDBPerm.ReadApp,
                                              "target": DEPLOYMENTS}).json()
    for grant in own:
        assert admin.delete(f"/v2/grant/{grant}").status_code == 204
    r = admin.patch(f"/v2/app/{STATUS}/object/{a.cluster}",
                    json={SYNC.key: {"uuid": account, "done": True, "grants": None}},
                    headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 204, r.text
    assert a.sync.get(f"/v2/app/{DEPLOYMENTS}/object/{b.deployment}").status_code == 200

    stack.restart_manager()
    wait_for(lambda: a.sync.get(f"/v2/app/{DEPLOYMENTS}/object/{b.deployment}"
                                ).status_code == 403, what="the group's wide grant gone")
    wait_for(lambda: a.sync.get(f"/v1/app/{DEPLOYMENTS}/search",
                                params={"cluster": json.dumps(a.cluster)}).json()
             == [a.deployment], what="A's own deployments readable again")
    assert search(a.sync, cluster=b.cluster) == []
