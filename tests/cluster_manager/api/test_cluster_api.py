"""The cluster API over HTTP: create, list, delete, redeploy; names claimed atomically."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from fplus.cluster_manager.model.apps_and_roles import CONFIG_APP, EDGE_APP
from fplus.config_store import uuids
from harness.gitcli import bare
from harness.servers import Api
from harness.stack import Stack, status, wait_for
from tests.conftest import grant, make_user

SPEC = {"namespace": "fplus-edge"}


def create(root: Api, name: str, **extra: object) -> dict:
    r = root.post("/v1/cluster", json={"name": name, **SPEC, **extra})
    assert r.status_code == 201, r.text
    return r.json()


def ready(stack: Stack, cluster: str) -> dict:
    return wait_for(lambda: (s := status(stack.admin, cluster)) and s.get("ready") and s,
                    what=f"{cluster} ready")


def principals_named(stack: Stack, name: str) -> list[str]:
    found = [stack.admin.get(f"/v2/identity/kerberos/{role}/{name}") for role in
             ("op1flux", "op1sync")]
    return [r.json() for r in found if r.status_code == 200]


def test_create_makes_the_object_and_entry_and_the_cluster_becomes_ready(
        stack: Stack, root: Api) -> None:
    created = create(root, "api-one")
    cluster = created["uuid"]
    assert created == {"uuid": cluster, "name": "api-one", **SPEC, "phase": "Pending"}
    assert stack.admin.get(f"/v2/app/{CONFIG_APP}/object/{cluster}").json() == \
        {"name": "api-one", **SPEC}
    registration = stack.admin.get(f"/v2/object/{cluster}").json()
    assert registration["class"] == uuids.Class.EdgeCluster
    assert ready(stack, cluster)["spec"]["name"] == "api-one"


@pytest.mark.parametrize(("body", "status_code", "words"), [
    ({"name": "Bad Name", "namespace": "x"}, 422, "DNS-1123"),
    ({"name": "x"}, 422, "namespace"),
    ({"name": "x", "namespace": "x", "colour": 1}, 422, "unknown keys"),
    ("not json", 400, "JSON object"),
])
def test_bad_bodies_are_refused_and_create_nothing(stack: Stack, root: Api, body: object,
                                                   status_code: int, words: str) -> None:
    before = set(stack.admin.get(f"/v2/app/{CONFIG_APP}").json())
    r = (root.post("/v1/cluster", data=body, headers={"Content-Type": "application/json"})
         if isinstance(body, str) else root.post("/v1/cluster", json=body))
    assert r.status_code == status_code and words in r.json()["error"]
    assert set(stack.admin.get(f"/v2/app/{CONFIG_APP}").json()) == before


def test_thirty_two_concurrent_creates_of_one_name_make_exactly_one_cluster(
        stack: Stack, root: Api) -> None:
    objects_before = set(stack.admin.get(f"/v2/class/{uuids.Class.EdgeCluster}/member").json())

    def attempt(_: int) -> int:
        return Api(root.base, root.auth).post(
            "/v1/cluster", json={"name": "contended", **SPEC}).status_code

    with ThreadPoolExecutor(32) as pool:
        codes = list(pool.map(attempt, range(32)))
    assert sorted(codes) == [201] + [409] * 31
    objects = set(stack.admin.get(f"/v2/class/{uuids.Class.EdgeCluster}/member").json())
    (winner,) = objects - objects_before  # the 31 losers left no object behind
    ready(stack, winner)
    assert len(principals_named(stack, "contended")) == 2


def test_a_name_written_directly_twice_has_one_owner_and_shares_no_principal(
        stack: Stack, root: Api) -> None:
    first = create(root, "direct-dup")["uuid"]
    ready(stack, first)
    second = stack.admin.post("/v2/object", json={"class": uuids.Class.EdgeCluster}).json()
    stack.admin.put(f"/v2/app/{CONFIG_APP}/object/{second['uuid']}",
                    json={"name": "direct-dup", **SPEC})
    failed = wait_for(lambda: (s := status(stack.admin, second["uuid"]))
                      and s.get("phase") == "Failed" and s, what="duplicate refused")
    assert first in failed["error"]
    flux = ready(stack, first)["flux"]["uuid"]
    grants = stack.admin.post("/v2/grant/find", json={"principal": flux}).json()
    targets = {stack.admin.get(f"/v2/grant/{g}").json()["target"] for g in grants}
    assert targets == {first}  # the first cluster's Flux principal pulls only its own repo
    # deleting the refused one removes nothing of the first
    assert root.delete(f"/v1/cluster/{second['uuid']}").status_code == 202
    wait_for(lambda: status(stack.admin, second["uuid"]) is None, what="duplicate gone")
    assert ready(stack, first)["flux"]["uuid"] == flux
    assert len(principals_named(stack, "direct-dup")) == 2


def test_a_refused_rename_reuses_nothing_and_undoing_it_recovers(stack: Stack,
                                                                 root: Api) -> None:
    cluster = create(root, "charlie")["uuid"]
    ready(stack, cluster)
    entry = f"/v2/app/{CONFIG_APP}/object/{cluster}"
    stack.admin.put(entry, json={"name": "echo", **SPEC})
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("phase") == "Failed",
             what="rename refused")
    # a new cluster may take the refused name, and it gets principals of its own
    echo = create(root, "echo")["uuid"]
    ready(stack, echo)
    assert create(root, "charlie-2")  # an unrelated name still works
    r = root.post("/v1/cluster", json={"name": "charlie", **SPEC})
    assert r.status_code == 409 and cluster in r.json()["error"]
    stack.admin.put(entry, json={"name": "charlie", **SPEC})  # undo
    st = wait_for(lambda: (s := status(stack.admin, cluster)) and s.get("phase") == "Ready"
                  and s, what="recovered")
    assert "refused" not in st and st["spec"]["name"] == "charlie"


def test_list_pages_filters_by_phase_and_shows_only_permitted_clusters(
        stack: Stack, root: Api) -> None:
    mine = create(root, "listed-a")["uuid"]
    other = create(root, "listed-b")["uuid"]
    for cluster in (mine, other):
        ready(stack, cluster)
    everything = []
    after = None
    while True:
        query = {"limit": "2", **({"after": after} if after else {})}
        page = root.get("/v1/cluster", params=query).json()
        everything += page["clusters"]
        after = page["next"]
        if after is None:
            break
    by_uuid = {c["uuid"]: c for c in everything}
    assert by_uuid[mine] == {"uuid": mine, "name": "listed-a", "phase": "Ready",
                             "syncState": "Unknown", "lastSeen": None, "hosts": 0, "labels": {},
                             "commit": status(stack.admin, mine)["commit"]}
    assert [c["uuid"] for c in everything] == sorted(by_uuid)
    ready_only = root.get("/v1/cluster", params={"phase": "Ready", "limit": "1000"}).json()
    assert {c["phase"] for c in ready_only["clusters"]} == {"Ready"}
    user, _ = make_user(stack.admin, "lister", "lister-pw")
    grant(stack.admin, user, uuids.EdgePerm.Clusters, mine)
    seen = Api(root.base, ("lister", "lister-pw")).get("/v1/cluster").json()["clusters"]
    assert [c["uuid"] for c in seen] == [mine]
    # ReadApp on the setup status app makes a read-only operator: sees all, changes nothing.
    viewer, _ = make_user(stack.admin, "viewer", "viewer-pw")
    grant(stack.admin, viewer, uuids.ConfigDBPerm.ReadApp, uuids.App.EdgeClusterSetupStatus)
    as_viewer = Api(root.base, ("viewer", "viewer-pw"))
    seen = as_viewer.get("/v1/cluster", params={"limit": "1000"}).json()["clusters"]
    assert {mine, other} <= {c["uuid"] for c in seen}
    assert as_viewer.get(f"/v1/cluster/{other}/status").json()["phase"] == "Ready"
    assert as_viewer.post(f"/v1/cluster/{other}/bootstrap-url").status_code == 403
    assert as_viewer.post(f"/v1/cluster/{other}/redeploy").status_code == 403
    assert root.get("/v1/cluster", params={"phase": "Sleeping"}).status_code == 400
    assert root.get("/v1/cluster", params={"limit": "0"}).status_code == 400
    assert root.get("/v1/cluster", params={"after": "x"}).status_code == 400


def test_create_needs_the_wildcard_grant(stack: Stack, root: Api) -> None:
    user, _ = make_user(stack.admin, "creator", "creator-pw")
    api = Api(root.base, ("creator", "creator-pw"))
    assert api.post("/v1/cluster", json={"name": "nope", **SPEC}).status_code == 403
    grant(stack.admin, user, uuids.EdgePerm.Clusters, uuids.NULL)
    # the Cluster Manager caches a caller's ACL for a few seconds
    wait_for(lambda: api.post("/v1/cluster", json={"name": "yes-1", **SPEC}).status_code == 201,
             10, "the grant to count")
    assert Api(root.base).post("/v1/cluster", json={"name": "x", **SPEC}).status_code == 401


def test_redeploy_commits_a_new_revision_even_when_nothing_changed(stack: Stack,
                                                                   root: Api) -> None:
    cluster = create(root, "redeployed")["uuid"]
    before = ready(stack, cluster)["commit"]
    r = root.post(f"/v1/cluster/{cluster}/redeploy")
    assert r.status_code == 202
    after = wait_for(lambda: (s := status(stack.admin, cluster)) and s.get("commit") != before
                     and s, what="new commit")
    assert after["redeployed"] == r.json()["requested"]
    repo = stack.repos / f"{cluster}.git"
    assert bare(repo, "rev-parse", f"{after['commit']}^").strip() == before
    assert bare(repo, "diff", "--stat", before, after["commit"]).strip() == ""
    assert root.post(f"/v1/cluster/{uuid.uuid4()}/redeploy").status_code == 404


def test_delete_of_a_bootstrapped_cluster_waits_for_the_edge_unless_forced(
        stack: Stack, root: Api) -> None:
    cluster = create(root, "torn-down")["uuid"]
    flux = ready(stack, cluster)["flux"]["uuid"]
    stack.admin.put(f"/v2/app/{EDGE_APP}/object/{cluster}", json={"hosts": []})
    assert root.delete(f"/v1/cluster/{cluster}").status_code == 202
    wait_for(lambda: ((status(stack.admin, cluster) or {}).get("teardown") or {}).get("commit"),
             what="teardown commit")
    view = root.get(f"/v1/cluster/{cluster}/status").json()
    assert view["phase"] == "Deleting"
    assert stack.admin.get(f"/v2/object/{flux}").status_code == 200  # waiting for the edge
    assert root.post(f"/v1/cluster/{cluster}/bootstrap-url").status_code == 409
    assert root.delete(f"/v1/cluster/{cluster}", params={"force": "true"}).status_code == 202
    wait_for(lambda: status(stack.admin, cluster) is None, what="torn down")
    assert stack.admin.get(f"/v2/object/{flux}").status_code == 404
    assert stack.admin.get(f"/v2/object/{cluster}").status_code == 404
    assert root.delete(f"/v1/cluster/{cluster}").status_code == 404
    assert create(root, "torn-down")  # the name is free again


def test_an_entry_the_config_store_refuses_leaves_no_object_and_no_claim(
        stack: Stack, root: Api) -> None:
    schema_url = f"/v2/app/{uuids.App.ConfigSchema}/object/{CONFIG_APP}"
    schema = stack.admin.get(schema_url).json()
    strict = {**schema, "properties": {**schema["properties"], "name": {
        "type": "string", "not": {"const": "refused-by-schema"}}}}  # refuses that name only
    objects_before = set(stack.admin.get(f"/v2/class/{uuids.Class.EdgeCluster}/member").json())
    assert stack.admin.put(schema_url, json=strict).status_code in (200, 201, 204)
    try:
        r = root.post("/v1/cluster", json={"name": "refused-by-schema", **SPEC})
        assert r.status_code == 422 and "refused the entry" in r.json()["error"]
    finally:
        assert stack.admin.put(schema_url, json=schema).status_code in (200, 201, 204)
    after = set(stack.admin.get(f"/v2/class/{uuids.Class.EdgeCluster}/member").json())
    assert after == objects_before  # the object made for it was removed again
    assert create(root, "refused-by-schema")  # and the name was not left claimed
