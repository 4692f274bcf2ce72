"""The fleet view over HTTP (``GET /v1/cluster``): search, phase and sync filters, name
order, cursors that stay put while clusters come and go, counts per phase, and 400s naming
the parameter.

The fleet: three commissioned clusters (one Synced, one Degraded, one whose edge never
reported) and twenty that fail cheaply (a chart template that does not exist: Failed at once,
nothing created), all carrying this run's tag in their names so the shared stack's other
clusters stay out of the counts."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from fplus.cluster_manager.model.apps_and_roles import CONFIG_APP, EDGE_APP
from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import Stack, status, wait_for
from tests.cluster_manager.api.conftest import commission, report_edge
from tests.conftest import grant, make_user

FAILING = 20
HOST = {"ready": True, "control_plane": True, "arch": "amd64", "k8s_version": "v1.30.0",
        "os_version": "Linux"}


@dataclass
class Fleet:
    tag: str
    synced: str
    degraded: str
    quiet: str
    failed: dict[str, str]
    """uuid -> name of the Failed ones."""

    def names(self) -> dict[str, str]:
        """Every cluster's name by uuid."""
        return {self.synced: f"{self.tag}-alpha", self.degraded: f"{self.tag}-bravo",
                self.quiet: f"{self.tag}-charlie", **self.failed}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _flux(*ready: str) -> dict[str, Any]:
    """A Flux report of Kustomizations whose Ready conditions are ``ready``."""
    objects = [{"kind": "Kustomization", "namespace": "flux-system", "name": f"k{i}",
                "ready": r} for i, r in enumerate(ready)]
    return {"objects": objects, "total": len(ready), "ready": ready.count("True"),
            "failed": ready.count("False"), "progressing": 0}


def seed_failing(stack: Stack, names: list[str]) -> dict[str, str]:
    """Cluster objects and entries for ``names`` in one ``POST /load``, each naming a chart
    template that does not exist (the reconciler records them Failed and creates nothing)."""
    made = {str(uuid.uuid4()): name for name in names}
    missing = str(uuid.uuid4())
    r = stack.admin.post("/load", json={
        "service": uuids.Service.ConfigDB, "version": 2,
        "objects": {uuids.Class.EdgeCluster: {c: {"name": n} for c, n in made.items()}},
        "configs": {CONFIG_APP: {c: {"name": n, "namespace": "fplus-edge", "chart": missing}
                                 for c, n in made.items()}}})
    assert r.status_code in (200, 204), r.text
    for cluster in made:
        wait_for(lambda c=cluster: (status(stack.admin, c) or {}).get("phase") == "Failed",
                 what=f"{made[cluster]} Failed")
    return made


@pytest.fixture(scope="module")
def fleet(stack: Stack) -> Fleet:
    tag = "fv" + uuid.uuid4().hex[:6]
    synced, degraded, quiet = (commission(stack, f"{tag}-{n}")
                               for n in ("alpha", "bravo", "charlie"))
    head = status(stack.admin, synced)["commit"]
    report_edge(stack, synced, lastSeen=_now(), appliedCommit=head, flux=_flux("True", "True"))
    report_edge(stack, degraded, lastSeen=_now(), appliedCommit=status(stack.admin, degraded)[
        "commit"], flux=_flux("True", "False"))
    failed = seed_failing(stack, [f"{tag}-f{i:02d}" for i in range(FAILING)])
    return Fleet(tag, synced, degraded, quiet, failed)


def listing(api: Api, **params: Any) -> dict[str, Any]:
    r = api.get("/v1/cluster", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def every_page(api: Api, after: str | None = None, **params: Any) -> list[dict[str, Any]]:
    """The rows of every page from the one after ``after`` on."""
    rows: list[dict[str, Any]] = []
    while True:
        page = listing(api, **params, **({"after": after} if after else {}))
        rows += page["clusters"]
        after = page["next"]
        if after is None:
            return rows


def test_name_order_pages_with_counts(root: Api, fleet: Fleet) -> None:
    rows = every_page(root, search=fleet.tag, sort="name", limit=4)
    names = fleet.names()
    assert [r["name"] for r in rows] == sorted(names.values())
    assert [r["uuid"] for r in rows] == sorted(names, key=names.__getitem__)
    first = listing(root, search=fleet.tag, sort="name", limit=4)
    assert len(first["clusters"]) == 4 and first["total"] == FAILING + 3
    assert {k: v for k, v in first["counts"].items() if v} == {
        "Failed": FAILING, "Online": 2, "Ready": 1}
    assert set(first["counts"]) == {"Pending", "Failed", "Provisioning", "Ready", "Online",
                                    "Stale", "Offline", "Deleting"}
    failed = listing(root, search=fleet.tag, phase="Failed", sort="name", limit=1000)
    assert failed["total"] == FAILING and failed["counts"] == first["counts"]
    assert [r["name"] for r in failed["clusters"]] == sorted(fleet.failed.values())


def test_rows_carry_sync_last_seen_and_the_error_of_a_failed_cluster(
        root: Api, fleet: Fleet) -> None:
    rows = {r["uuid"]: r for r in every_page(root, search=fleet.tag, limit=1000)}
    alpha, bravo, charlie = rows[fleet.synced], rows[fleet.degraded], rows[fleet.quiet]
    assert (alpha["phase"], alpha["syncState"]) == ("Online", "Synced")
    assert (bravo["phase"], bravo["syncState"]) == ("Online", "Degraded")
    assert (charlie["phase"], charlie["syncState"], charlie["lastSeen"]) == (
        "Ready", "Unknown", None)
    assert alpha["lastSeen"].endswith("Z") and "error" not in alpha
    some_failed = rows[next(iter(fleet.failed))]
    assert some_failed["phase"] == "Failed" and some_failed["syncState"] == "Unknown"
    assert "unknown chart" in some_failed["error"]
    assert some_failed["name"] == fleet.failed[some_failed["uuid"]]


def test_sync_filter_and_search(root: Api, fleet: Fleet) -> None:
    def found(**params: Any) -> set[str]:
        return {r["uuid"] for r in every_page(root, search=fleet.tag, limit=7, **params)}

    assert found(sync="Synced") == {fleet.synced}
    assert found(sync="Degraded") == {fleet.degraded}
    assert found(sync="Progressing") == set()
    assert found(sync="Unknown") == {fleet.quiet, *fleet.failed}
    degraded = listing(root, search=fleet.tag, sync="Degraded")
    assert {k: v for k, v in degraded["counts"].items() if v} == {"Online": 1}
    assert found(phase="Online", sync="Synced") == {fleet.synced}
    # part of a name, in any case; or the start of a uuid
    assert {r["uuid"] for r in listing(root, search=f"{fleet.tag}-BRAV")["clusters"]} == {
        fleet.degraded}
    by_uuid = listing(root, search=fleet.synced[:13].upper())["clusters"]
    assert [r["uuid"] for r in by_uuid] == [fleet.synced]
    assert listing(root, search=f"{fleet.tag}-nothing")["clusters"] == []


def test_cursors_stay_put_while_clusters_come_and_go(stack: Stack, root: Api,
                                                     fleet: Fleet) -> None:
    names = fleet.names()
    expected = sorted(names.values())
    first = listing(root, search=fleet.tag, sort="name", limit=5)
    assert [r["name"] for r in first["clusters"]] == expected[:5]
    # one cluster sorting before the cursor and one after it appear; one already shown goes
    seed_failing(stack, [f"{fleet.tag}-a0-early", f"{fleet.tag}-zz-late"])
    gone = first["clusters"][0]["uuid"]
    assert stack.admin.delete(f"/v2/app/{CONFIG_APP}/object/{gone}").status_code == 204
    rest = every_page(root, first["next"], search=fleet.tag, sort="name", limit=5)
    assert [r["name"] for r in rest] == [*expected[5:], f"{fleet.tag}-zz-late"]
    # the same cursor twice gives the same page
    again = listing(root, search=fleet.tag, sort="name", limit=5, after=first["next"])
    assert again["clusters"] == listing(root, search=fleet.tag, sort="name", limit=5,
                                        after=first["next"])["clusters"]


def test_a_user_sees_and_counts_only_the_clusters_it_may(stack: Stack, root: Api,
                                                          fleet: Fleet) -> None:
    user, as_user = make_user(stack.admin)
    grant(stack.admin, user, uuids.EdgePerm.Clusters, fleet.degraded)
    limited = Api(root.base, as_user.auth)
    page = listing(limited, search=fleet.tag, sort="name")
    assert [r["uuid"] for r in page["clusters"]] == [fleet.degraded]
    assert page["total"] == 1 and {k: v for k, v in page["counts"].items() if v} == {
        "Online": 1}
    nobody = listing(Api(root.base, make_user(stack.admin)[1].auth), search=fleet.tag)
    assert nobody["clusters"] == [] and sum(nobody["counts"].values()) == 0


@pytest.mark.parametrize(("params", "named"), [
    ({"phase": "Sleeping"}, "phase"), ({"sync": "synced"}, "sync"), ({"sync": "Late"}, "sync"),
    ({"sort": "age"}, "sort"), ({"limit": "0"}, "limit"), ({"limit": "1001"}, "limit"),
    ({"after": "x"}, "after"), ({"sort": "name", "after": str(uuid.uuid4())}, "after"),
    ({"sort": "name", "after": "n.!!"}, "after"), ({"search": "x" * 201}, "search"),
    ({"search": "a\x00b"}, "search"), ({"selector": "a in (b"}, "selector"),
    ({"page": "2"}, "page"),
])
def test_a_bad_parameter_is_400_naming_it(root: Api, params: dict[str, str],
                                          named: str) -> None:
    r = root.get("/v1/cluster", params=params)
    assert r.status_code == 400, r.text
    assert named in r.json()["error"]


def test_edge_entries_are_not_echoed_beyond_the_row(stack: Stack, root: Api,
                                                    fleet: Fleet) -> None:
    """The row holds what the list shows, never the edge's entry (certificates, objects)."""
    report_edge(stack, fleet.quiet, kubeseal_cert="-----BEGIN CERTIFICATE-----x",
                hosts=[HOST | {"hostname": "h1"}, HOST | {"hostname": "h2"}])
    [row] = listing(root, search=f"{fleet.tag}-charlie")["clusters"]
    assert set(row) == {"uuid", "name", "phase", "syncState", "lastSeen", "hosts", "commit",
                        "labels"}
    assert row["hosts"] == 2
    stack.admin.delete(f"/v2/app/{EDGE_APP}/object/{fleet.quiet}")
