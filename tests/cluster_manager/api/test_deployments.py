"""Per-cluster Edge deployments over HTTP: create, list, read, move (PATCH) and delete, written
as ACS writes them and found as Edge Sync finds them; every refusal writes nothing."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from fplus.config_store import uuids
from harness.central import import_chart
from harness.servers import Api
from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.api.conftest import report_edge

DEPLOYMENT = uuids.App.EdgeDeployment
TEMPLATE = uuids.App.HelmChartTemplate
HOSTS = [{"hostname": name, "arch": "amd64", "k8s_version": "v1.30.4+k3s1",
          "control_plane": name == "edge-1", "os_version": "Ubuntu 24.04 LTS", "ready": True}
         for name in ("edge-1", "edge-2")]


def make_chart(stack: Stack, name: str, chart: str = "mqtt-broker") -> str:
    """A Helm chart template (object, Info name, entry) as an administrator makes one."""
    r = stack.admin.post("/v2/object", json={"class": uuids.Class.HelmChart})
    assert r.status_code == 201, r.text
    template = r.json()["uuid"]
    assert stack.admin.put(f"/v2/app/{uuids.App.Info}/object/{template}",
                           json={"name": name}).status_code in (201, 204)
    assert stack.admin.put(f"/v2/app/{TEMPLATE}/object/{template}",
                           json={"chart": chart, "values": {}}).status_code == 201
    return template


def deployments_of(stack: Stack, cluster: str) -> list[str]:
    """What Edge Sync finds: a search of the Edge deployment app on ``cluster``."""
    r = stack.admin.get(f"/v1/app/{DEPLOYMENT}/search", params={"cluster": f'"{cluster}"'})
    assert r.status_code == 200, r.text
    return sorted(r.json())


def imported_chart(stack: Stack, name: str) -> str:
    """A chart template ``name`` of the MQTT broker's chart, the chart imported into the
    shared charts repo (one the repo lacks is refused; the suite's shared stack may have it
    already, a lone run does not)."""
    import_chart(Api(stack.manager.url, stack.admin.auth), "mqtt-broker")
    return make_chart(stack, name)


@pytest.fixture(scope="module")
def chart(stack: Stack) -> str:
    return imported_chart(stack, "MQTT broker")


@pytest.fixture
def cluster(stack: Stack) -> str:
    """A configured cluster whose Edge Sync reported two hosts."""
    found = create_cluster(stack.admin, f"dep-{uuid.uuid4().hex[:8]}")
    report_edge(stack, found, hosts=HOSTS)
    return found


def test_create_list_get_move_and_delete(stack: Stack, root: Api, chart: str,
                                         cluster: str) -> None:
    path = f"/v1/cluster/{cluster}/deployment"
    r = root.post(path, json={"name": "broker", "chart": chart, "hostname": "edge-1",
                              "values": {"replicas": 2}})
    assert r.status_code == 201, r.text
    created = r.json()
    d = created["uuid"]
    assert r.headers["Location"].endswith(f"{path}/{d}")
    assert created | {"createdAt": None} == {
        "uuid": d, "name": "broker", "cluster": cluster, "chart": chart,
        "hostname": "edge-1", "values": {"replicas": 2}, "dependsOn": [],
        "driftDetection": None, "createdAt": None} | UNREPORTED
    # as ACS writes it: an Edge deployment object, its Info name, the entry with `cluster`
    assert stack.admin.get(f"/v2/object/{d}").json()["class"] == uuids.Class.EdgeDeployment
    assert stack.admin.get(f"/v2/app/{uuids.App.Info}/object/{d}").json()["name"] == "broker"
    entry = stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{d}").json()
    assert entry == {"name": "broker", "cluster": cluster, "chart": chart,
                     "hostname": "edge-1", "values": {"replicas": 2},
                     "createdAt": created["createdAt"]}
    assert deployments_of(stack, cluster) == [d]

    assert root.get(path).json() == {"deployments": [created]}
    one = root.get(f"{path}/{d}")
    assert one.status_code == 200 and one.json() == created
    etag = one.headers["ETag"]

    moved = root.patch(f"{path}/{d}", json={"hostname": "edge-2"},
                       headers={"If-Match": etag,
                                "Content-Type": "application/merge-patch+json"})
    assert moved.status_code == 200, moved.text
    assert moved.json()["hostname"] == "edge-2" and moved.headers["ETag"] != etag
    stale = root.patch(f"{path}/{d}", json={"hostname": "edge-1"}, headers={"If-Match": etag})
    assert stale.status_code == 412, stale.text
    assert root.get(f"{path}/{d}").json()["hostname"] == "edge-2"
    floating = root.patch(f"{path}/{d}", json={"hostname": None, "values": {"replicas": None,
                                                                          "tag": "v2"}})
    assert floating.status_code == 200, floating.text
    entry = stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{d}").json()
    assert "hostname" not in entry and entry["values"] == {"tag": "v2"}
    assert entry["createdAt"] == created["createdAt"]
    assert floating.json()["hostname"] is None

    assert root.delete(f"{path}/{d}").status_code == 204
    assert stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{d}").status_code == 404
    assert stack.admin.get(f"/v2/object/{d}").status_code == 404
    assert root.get(f"{path}/{d}").status_code == 404
    assert deployments_of(stack, cluster) == []


UNREPORTED = {"state": "unknown", "message": "the edge has not reported its deployments",
              "commit": None, "drifted": False, "waitingOn": []}


def test_states_follow_the_edge_report_in_the_list_and_the_cluster(
        stack: Stack, root: Api, chart: str, cluster: str) -> None:
    path = f"/v1/cluster/{cluster}/deployment"
    made = [root.post(path, json={"name": name, "chart": chart}).json()["uuid"]
            for name in ("a-ready", "b-failing")]
    release = [f"mqtt-broker-{d}" for d in made]
    report_edge(stack, cluster, deployments={"releases": release, "failed": []},
                flux={"objects": [
                    {"kind": "HelmRelease", "namespace": "fplus-edge", "name": release[0],
                     "ready": "True", "revision": "0.1.0"},
                    {"kind": "HelmRelease", "namespace": "fplus-edge", "name": release[1],
                     "ready": "False", "message": "install failed", "revision": "0.1.0"}],
                          "total": 2, "ready": 1, "failed": 1, "progressing": 0})
    listed = root.get(path).json()["deployments"]
    assert [(d["name"], d["state"]) for d in listed] == [("a-ready", "ready"),
                                                        ("b-failing", "failed")]
    assert listed[0]["commit"] == "0.1.0" and "install failed" in listed[1]["message"]
    view = root.get(f"/v1/cluster/{cluster}").json()
    assert view["deployments"] == listed


def test_floating_by_default(root: Api, chart: str, cluster: str) -> None:
    r = root.post(f"/v1/cluster/{cluster}/deployment", json={"name": "f", "chart": chart})
    assert r.status_code == 201 and r.json()["hostname"] is None and r.json()["values"] == {}


@pytest.mark.parametrize(("body", "status", "words"), [
    ({"name": "x", "chart": str(uuid.uuid4())}, 422, "chart: no Helm chart template"),
    ({"name": "x", "chart": uuids.Shared.EdgeClusterChart}, 422, "is a system chart"),
    ({"name": "x", "chart": "CHART", "hostname": "edge-9"}, 422,
     "hostname: cluster"),
    ({"name": "x", "chart": "CHART", "values": [1]}, 422, "values: values must be"),
    ({"name": "x", "chart": "not-a-uuid"}, 422, "chart: chart must be"),
    ({"name": "", "chart": "CHART"}, 422, "name: name must be"),
    ({"name": "x", "chart": "CHART", "colour": 1}, 422, "unknown keys: colour"),
    ("not json", 400, "JSON object"),
])
def test_bad_bodies_are_refused_and_write_nothing(stack: Stack, root: Api, chart: str,
                                                  cluster: str, body: object, status: int,
                                                  words: str) -> None:
    before = set(stack.admin.get(f"/v2/app/{DEPLOYMENT}").json())
    path = f"/v1/cluster/{cluster}/deployment"
    if isinstance(body, str):
        r = root.post(path, data=body, headers={"Content-Type": "application/json"})
    else:
        r = root.post(path, json={k: chart if v == "CHART" else v for k, v in body.items()})
    assert r.status_code == status and words in r.json()["error"], r.text
    assert set(stack.admin.get(f"/v2/app/{DEPLOYMENT}").json()) == before
    assert deployments_of(stack, cluster) == []


def test_a_name_is_used_once_per_cluster(stack: Stack, root: Api, chart: str,
                                         cluster: str) -> None:
    """409, as for cluster names: the request is well-formed, the name is taken."""
    path = f"/v1/cluster/{cluster}/deployment"
    first = root.post(path, json={"name": "twice", "chart": chart}).json()["uuid"]
    r = root.post(path, json={"name": "twice", "chart": chart, "hostname": "edge-1"})
    assert r.status_code == 409 and first in r.json()["error"], r.text
    other = root.post(path, json={"name": "other", "chart": chart}).json()["uuid"]
    r = root.patch(f"{path}/{other}", json={"name": "twice"})
    assert r.status_code == 409, r.text
    assert deployments_of(stack, cluster) == sorted([first, other])
    assert stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{other}").json()["name"] == "other"


def test_bad_patches_are_refused_and_change_nothing(stack: Stack, root: Api, chart: str,
                                                    cluster: str) -> None:
    path = f"/v1/cluster/{cluster}/deployment"
    d = root.post(path, json={"name": "p", "chart": chart, "hostname": "edge-1"}).json()["uuid"]
    before = stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{d}").json()
    for patch, words in (({"hostname": "edge-9"}, "hostname"),
                         ({"chart": str(uuid.uuid4())}, "chart"),
                         ({"values": "x"}, "values"), ({"cluster": str(uuid.uuid4())},
                                                       "unknown keys")):
        r = root.patch(f"{path}/{d}", json=patch)
        assert r.status_code == 422 and words in r.json()["error"], (patch, r.text)
    assert root.patch(f"{path}/{d}", json={}, headers={"If-Match": '"stale"'}
                      ).status_code == 412
    assert root.delete(f"{path}/{d}", headers={"If-Match": '"stale"'}).status_code == 412
    assert root.patch(f"{path}/{d}", json={}, headers={"If-Match": "*"}).status_code == 200
    assert stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{d}").json() == before


def test_fleet_owned_deployments_are_listed_but_not_changed(stack: Stack, root: Api,
                                                            chart: str, cluster: str) -> None:
    made = root.post("/v1/fleet-deployment", json={"name": "fleet-made", "chart": chart,
                                                   "clusters": [cluster]})
    assert made.status_code == 201, made.text
    fleet = made.json()["uuid"]
    path = f"/v1/cluster/{cluster}/deployment"
    listed = wait_for(lambda: root.get(path).json()["deployments"], 60,
                      "the fleet deployment's member on the cluster")
    [member] = listed
    assert member["name"] == "fleet-made" and member["fleetDeployment"] == fleet
    d = member["uuid"]
    entry = stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{d}").json()
    for r in (root.patch(f"{path}/{d}", json={"hostname": "edge-1"}),
              root.delete(f"{path}/{d}")):
        assert r.status_code == 409 and fleet in r.json()["error"], r.text
    assert stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{d}").json() == entry
    assert root.delete(f"/v1/fleet-deployment/{fleet}").status_code == 202
    wait_for(lambda: not root.get(path).json()["deployments"], 60,
             "the fleet deployment's member removed with it")


def test_unknown_clusters_deployments_and_bad_paths(root: Api, chart: str,
                                                    cluster: str) -> None:
    other = str(uuid.uuid4())
    assert root.get(f"/v1/cluster/{other}/deployment").status_code == 404
    assert root.post(f"/v1/cluster/{other}/deployment",
                     json={"name": "x", "chart": chart}).status_code == 404
    assert root.get(f"/v1/cluster/{cluster}/deployment/{other}").status_code == 404
    assert root.delete(f"/v1/cluster/{cluster}/deployment/{other}").status_code == 404
    r = root.get(f"/v1/cluster/{cluster}/deployment/nope")
    assert r.status_code == 400 and "deployment must be a UUID" in r.json()["error"]
    assert root.get("/v1/cluster/nope/deployment").status_code == 400


def test_a_deployment_of_another_cluster_is_not_found_here(stack: Stack, root: Api,
                                                           chart: str, cluster: str) -> None:
    elsewhere = create_cluster(stack.admin, f"dep-{uuid.uuid4().hex[:8]}")
    d = root.post(f"/v1/cluster/{elsewhere}/deployment",
                  json={"name": "x", "chart": chart}).json()["uuid"]
    assert root.get(f"/v1/cluster/{cluster}/deployment/{d}").status_code == 404
    assert root.delete(f"/v1/cluster/{cluster}/deployment/{d}").status_code == 404
    assert deployments_of(stack, elsewhere) == [d]


def test_permissions_follow_the_cluster(stack: Stack, chart: str, cluster: str,
                                        user_with: Callable[..., Api]) -> None:
    path = f"/v1/cluster/{cluster}/deployment"
    nobody = user_with()
    assert nobody.get(path).status_code == 403
    assert nobody.post(path, json={"name": "x", "chart": chart}).status_code == 403
    manager = user_with((uuids.EdgePerm.Clusters, cluster))
    r = manager.post(path, json={"name": "x", "chart": chart})
    assert r.status_code == 201, r.text
    assert manager.get(path).json()["deployments"][0]["uuid"] == r.json()["uuid"]
    assert Api(stack.manager.url).get(path).status_code == 401
    assert deployments_of(stack, cluster) == [r.json()["uuid"]]


def test_the_config_store_refuses_malformed_entries_whoever_writes_them(
        stack: Stack, chart: str, cluster: str) -> None:
    d = str(uuid.uuid4())
    assert stack.admin.post("/v2/object", json={"class": uuids.Class.EdgeDeployment,
                                                "uuid": d}).status_code == 201
    for bad in ({"bogus": 1}, {"name": "x", "cluster": cluster},
                {"name": "x", "cluster": "nope", "chart": chart},
                {"name": "x", "cluster": cluster, "chart": chart, "values": [1]},
                {"name": "x", "cluster": cluster, "chart": chart, "extra": 1}):
        r = stack.admin.put(f"/v2/app/{DEPLOYMENT}/object/{d}", json=bad)
        assert r.status_code == 422, (bad, r.text)
    assert stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{d}").status_code == 404
    # everything ACS writes (legacy `charts`, null hostname, createdAt) and our owner mark
    for good in ({"name": "x", "cluster": cluster, "charts": [chart]},
                 {"name": "x", "cluster": cluster, "chart": chart, "hostname": None,
                  "values": {}, "createdAt": "2025-01-01T00:00:00.000Z",
                  "fleetDeployment": str(uuid.uuid4())}):
        r = stack.admin.put(f"/v2/app/{DEPLOYMENT}/object/{d}", json=good)
        assert r.status_code in (201, 204), (good, r.text)
