"""The API around escrow: per-key seal records in the listing (and their removal),
``?unused=true`` against the edge's reported Secret references, and the status summary."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import Stack
from tests.cluster_manager.api.conftest import report_edge
from tests.cluster_manager.escrow.conftest import (
    bootstrap,
    cm_status,
    fingerprint,
    listing,
    rows,
    sealed_entries,
    secret_url,
)
from tests.conftest import grant, make_user


def now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def put(api: Api, cluster: str, ns: str, name: str, key: str, query: str = "") -> None:
    r = api.put(secret_url(cluster, ns, name, key) + query, data=f"{name}-{key}".encode())
    assert r.status_code == 204, r.text


def test_seals_are_recorded_per_key(escrow_stack: Stack, root_api: Api) -> None:
    cluster = bootstrap(escrow_stack, "records-edge")
    uid, session = make_user(escrow_stack.admin)
    grant(escrow_stack.admin, uid, uuids.EdgePerm.Secrets, cluster.uuid)
    user = Api(escrow_stack.manager.url, session.auth)
    start = time.time()
    put(root_api, cluster.uuid, "app", "db", "user")
    put(user, cluster.uuid, "app", "db", "password")
    put(root_api, cluster.uuid, "app", "db", "dry", "?dryrun")  # records nothing
    done = time.time()
    entries = sealed_entries(root_api, cluster.uuid)
    assert set(entries) == {("app", "db", "user"), ("app", "db", "password")}
    for entry in entries.values():
        assert start * 1000 - 1 <= entry["sealedAt"] <= done * 1000 + 1
        assert entry["certFingerprint"] == fingerprint(cluster.key)
        assert entry["escrowed"] is True and entry["needsRepost"] is False
    assert entries[("app", "db", "password")]["sealedBy"] == uid
    assert entries[("app", "db", "user")]["sealedBy"] not in ("", uid)
    assert set(rows(escrow_stack, cluster.uuid)) == set(entries)
    assert cm_status(root_api, cluster.uuid)["secrets"] == {
        "sealedTo": fingerprint(cluster.key), "pending": 0, "repost": 0, "escrow": True}


def test_delete_removes_the_record(escrow_stack: Stack, root_api: Api) -> None:
    cluster = bootstrap(escrow_stack, "delete-edge")
    for key in ("a", "b"):
        put(root_api, cluster.uuid, "app", "gone", key)
    put(root_api, cluster.uuid, "app", "kept", "a")
    url = secret_url(cluster.uuid, "app", "gone", "a")
    assert root_api.delete(url + "?dryrun").status_code == 204
    assert ("app", "gone", "a") in rows(escrow_stack, cluster.uuid)  # a dry run keeps it

    assert root_api.delete(url).status_code == 204
    assert set(sealed_entries(root_api, cluster.uuid)) == {("app", "gone", "b"),
                                                           ("app", "kept", "a")}
    assert set(rows(escrow_stack, cluster.uuid)) == {("app", "gone", "b"), ("app", "kept", "a")}
    assert root_api.delete(secret_url(cluster.uuid, "app", "gone", "b")).status_code == 204
    assert [(s["namespace"], s["name"]) for s in listing(root_api, cluster.uuid)] == \
        [("app", "kept")]
    assert set(rows(escrow_stack, cluster.uuid)) == {("app", "kept", "a")}
    assert root_api.delete(url).status_code == 404  # nothing left to delete: said so
    put(root_api, cluster.uuid, "app", "gone", "a")  # and sealing it again records it again
    assert ("app", "gone", "a") in rows(escrow_stack, cluster.uuid)


def test_unused_filters_by_the_edges_references(escrow_stack: Stack, root_api: Api) -> None:
    cluster = bootstrap(escrow_stack, "unused-edge")
    for ns, name in (("app", "used"), ("app", "spare"), ("other", "used"), ("other", "old")):
        put(root_api, cluster.uuid, ns, name, "k")
    base = f"/v1/cluster/{cluster.uuid}/secret"
    r = root_api.get(base + "?unused=true")
    assert r.status_code == 409, r.text
    assert "reference" in r.json()["error"]
    assert root_api.get(base + "?unused=false").status_code == 200

    refs = {"secrets": ["app/used", "other/used", "app/not-sealed"], "at": now(), "error": None}
    report_edge(escrow_stack, cluster.uuid, secretRefs=refs)
    r = root_api.get(base + "?unused=true")
    assert r.status_code == 200, r.text
    assert [(s["namespace"], s["name"]) for s in r.json()] == [("app", "spare"),
                                                              ("other", "old")]
    assert all(s["sealed"] and s["keys"] == ["k"] for s in r.json())
    assert len(listing(root_api, cluster.uuid, "?unused=false")) == 4
    assert len(listing(root_api, cluster.uuid)) == 4

    report_edge(escrow_stack, cluster.uuid, secretRefs={"secrets": [], "at": now()})
    assert len(listing(root_api, cluster.uuid, "?unused=true")) == 4

    report_edge(escrow_stack, cluster.uuid, secretRefs={"secrets": ["app/used"], "at": now(),
                                                        "truncated": True})
    assert root_api.get(base + "?unused=true").status_code == 409  # an incomplete list

    report_edge(escrow_stack, cluster.uuid, secretRefs={
        "secrets": None, "truncated": None, "at": now(), "error": "pods: forbidden"})
    assert root_api.get(base + "?unused=true").status_code == 409  # could not list Pods


def test_bad_unused_is_400(escrow_stack: Stack, root_api: Api) -> None:
    cluster = bootstrap(escrow_stack, "bad-unused-edge")
    for query in ("?unused=maybe", "?unused=", "?unused=True", "?unused=1",
                  "?unsued=true"):
        r = root_api.get(f"/v1/cluster/{cluster.uuid}/secret{query}")
        assert r.status_code == 400, (query, r.text)
        assert r.json()["error"]


def test_listing_needs_the_secrets_permission(escrow_stack: Stack, root_api: Api) -> None:
    cluster = bootstrap(escrow_stack, "perm-edge")
    put(root_api, cluster.uuid, "app", "x", "k")
    _, session = make_user(escrow_stack.admin)
    stranger = Api(escrow_stack.manager.url, session.auth)
    for query in ("", "?unused=true"):
        assert stranger.get(f"/v1/cluster/{cluster.uuid}/secret{query}").status_code == 403
