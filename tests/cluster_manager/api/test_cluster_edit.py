"""Reading and editing a cluster over HTTP: ``GET``/``PATCH /v1/cluster/<c>`` (merge-patch,
ETag and If-Match), labels at creation and by patch, and the list's label selector."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import yaml

from fplus.cluster_manager.model.apps_and_roles import CONFIG_APP
from fplus.config_store import uuids
from harness.central import import_flux
from harness.gitcli import bare
from harness.servers import Api
from harness.stack import Stack, status, wait_for
from tests.cluster_manager.fleet.conftest import CHART, fleet_chart

SPEC = {"namespace": "fplus-edge"}
MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}
FLUX_VERSION = "v2.7.5"


@pytest.fixture(scope="module", autouse=True)
def central_imports(stack: Stack, root: Api) -> None:
    """The chart of the chart template (:data:`CHART`) and the Flux version the edits name,
    imported: a change naming one the central repos lack is refused."""
    fleet_chart(stack)
    import_flux(root, FLUX_VERSION)


def create(root: Api, name: str, **extra: object) -> str:
    r = root.post("/v1/cluster", json={"name": name, **SPEC, **extra})
    assert r.status_code == 201, r.text
    return str(r.json()["uuid"])


def tag(header: str) -> str:
    """An ETag header's opaque tag."""
    return header.removeprefix("W/").strip('"')


def entry(stack: Stack, cluster: str) -> tuple[Any, str]:
    """The configuration entry as the Config Store holds it, and its ETag."""
    r = stack.admin.get(f"/v2/app/{CONFIG_APP}/object/{cluster}")
    assert r.status_code == 200, r.text
    return r.json(), tag(r.headers["ETag"])


def patch(api: Api, cluster: str, body: object, **headers: str) -> Any:
    return api.patch(f"/v1/cluster/{cluster}", json=body, headers={**MERGE_PATCH, **headers})


def test_get_answers_the_configuration_its_labels_and_an_etag(stack: Stack,
                                                              root: Api) -> None:
    labels = {"site": "leeds", "factoryplus.app.amrc.co.uk/tier": ""}
    cluster = create(root, "edit-get", labels=labels, values={"a": 1})
    r = root.get(f"/v1/cluster/{cluster}")
    assert r.status_code == 200, r.text
    got = r.json()
    assert {k: got[k] for k in ("uuid", "name", "namespace", "labels", "values")} == {
        "uuid": cluster, "name": "edit-get", **SPEC, "labels": labels, "values": {"a": 1}}
    assert got["phase"] in ("Pending", "Provisioning", "Ready")
    assert r.headers["ETag"] == f'"{entry(stack, cluster)[1]}"'
    assert entry(stack, cluster)[0]["labels"] == labels  # labels at creation are stored
    unlabelled = create(root, "edit-get-bare")
    assert root.get(f"/v1/cluster/{unlabelled}").json()["labels"] == {}
    assert root.get(f"/v1/cluster/{uuid.uuid4()}").status_code == 404
    assert root.get("/v1/cluster/not-a-uuid").status_code == 400


@pytest.mark.parametrize(("body", "field"), [
    ({"labels": {"-site": "x"}}, "labels.-site"),
    ({"labels": {"site": "le eds"}}, "labels.site"),
    ({"labels": ["site"]}, "labels"),
])
def test_invalid_labels_at_creation_are_refused_naming_the_field(
        stack: Stack, root: Api, body: dict[str, Any], field: str) -> None:
    before = set(stack.admin.get(f"/v2/app/{CONFIG_APP}").json())
    r = root.post("/v1/cluster", json={"name": "edit-badlabels", **SPEC, **body})
    assert r.status_code == 422 and r.json()["error"].startswith(field), r.text
    assert set(stack.admin.get(f"/v2/app/{CONFIG_APP}").json()) == before


def test_each_editable_field_is_patched_and_the_answer_is_the_new_configuration(
        stack: Stack, root: Api) -> None:
    cluster = create(root, "edit-fields", labels={"site": "leeds", "old": "x"},
                     values={"keep": 1, "drop": 2, "deep": {"a": 1}})
    etag = root.get(f"/v1/cluster/{cluster}").headers["ETag"]
    r = patch(root, cluster, {"values": {"drop": None, "deep": {"b": 2}, "new": "v"},
                              "labels": {"old": None, "tier": "line"},
                              "sealedSecrets": False, "fluxVersion": FLUX_VERSION,
                              "chart": CHART}, **{"If-Match": etag})
    assert r.status_code == 200, r.text
    want = {"name": "edit-fields", **SPEC, "labels": {"site": "leeds", "tier": "line"},
            "values": {"keep": 1, "deep": {"a": 1, "b": 2}, "new": "v"},
            "sealedSecrets": False, "fluxVersion": FLUX_VERSION, "chart": CHART}
    stored, stored_etag = entry(stack, cluster)
    assert stored == want
    assert {k: r.json()[k] for k in want} == want and r.json()["uuid"] == cluster
    assert tag(r.headers["ETag"]) == stored_etag != tag(etag)
    # null removes a field; plain application/json is the same merge-patch
    r = root.patch(f"/v1/cluster/{cluster}", json={"chart": None, "fluxVersion": None})
    assert r.status_code == 200, r.text
    assert "chart" not in entry(stack, cluster)[0] and "fluxVersion" not in r.json()
    # a fixed field repeated with its current value changes nothing
    same = patch(root, cluster, {"name": "edit-fields", "namespace": "fplus-edge"})
    assert same.status_code == 200 and tag(same.headers["ETag"]) == entry(stack, cluster)[1]


@pytest.fixture(scope="module")
def refused_target(root: Api) -> str:
    """One cluster for the refusal cases."""
    return create(root, "edit-refused", labels={"site": "leeds"})


@pytest.mark.parametrize(("body", "field", "words"), [
    ({"name": "edit-renamed"}, "name", "principals"),
    ({"namespace": "other"}, "namespace", "fixed"),
    ({"bare": True}, "bare", "fixed"),
    ({"labels": {"ok": "1", "Bad Key": "x"}}, "labels.Bad Key", "label key"),
    ({"labels": {"site": "a b"}}, "labels.site", "label value"),
    ({"values": [1]}, "values", "JSON object"),
    ({"chart": "nope"}, "chart", "UUID"),
    ({"fluxVersion": "latest"}, "fluxVersion", "Flux version"),
    ({"sealedSecrets": "yes"}, "sealedSecrets", "true or false"),
    ({"phase": "Ready"}, "phase", "only values"),
    ([{"labels": {}}], "", "JSON object"),
])
def test_a_refused_patch_names_the_field_and_writes_nothing(
        stack: Stack, root: Api, refused_target: str, body: object, field: str,
        words: str) -> None:
    cluster = refused_target
    before = entry(stack, cluster)
    r = patch(root, cluster, body)
    assert r.status_code == 422, r.text
    assert r.json()["error"].startswith(field) and words in r.json()["error"], r.text
    assert entry(stack, cluster) == before


def test_a_stale_etag_is_412_and_writes_nothing(stack: Stack, root: Api) -> None:
    cluster = create(root, "edit-stale", labels={"site": "leeds"})
    stale = root.get(f"/v1/cluster/{cluster}").headers["ETag"]
    assert patch(root, cluster, {"labels": {"site": "york"}}).status_code == 200  # no If-Match
    current = entry(stack, cluster)
    r = patch(root, cluster, {"labels": {"site": "hull"}}, **{"If-Match": stale})
    assert r.status_code == 412 and "changed" in r.json()["error"]
    assert entry(stack, cluster) == current and current[0]["labels"] == {"site": "york"}
    fresh = root.get(f"/v1/cluster/{cluster}").headers["ETag"]
    r = patch(root, cluster, {"labels": {"site": "hull"}}, **{"If-Match": fresh})
    assert r.status_code == 200 and entry(stack, cluster)[0]["labels"] == {"site": "hull"}
    assert patch(root, cluster, {"values": {"x": 1}}, **{"If-Match": "*"}).status_code == 200


def test_patch_refusals_before_the_entry(stack: Stack, root: Api, user_with: Any) -> None:
    cluster = create(root, "edit-misc")
    before = entry(stack, cluster)
    assert patch(root, str(uuid.uuid4()), {"labels": {"a": "b"}}).status_code == 404
    r = root.patch(f"/v1/cluster/{cluster}", data="labels: {}",
                   headers={"Content-Type": "application/yaml"})
    assert r.status_code == 415
    r = root.patch(f"/v1/cluster/{cluster}", data="{", headers=MERGE_PATCH)
    assert r.status_code == 400
    viewer = user_with((uuids.ConfigDBPerm.ReadApp, uuids.App.EdgeClusterSetupStatus))
    assert viewer.get(f"/v1/cluster/{cluster}").status_code == 200  # a read-only operator
    assert patch(viewer, cluster, {"labels": {"a": "b"}}).status_code == 403
    assert Api(root.base).patch(f"/v1/cluster/{cluster}", json={}).status_code == 401
    assert entry(stack, cluster) == before


def test_the_list_shows_labels_and_filters_by_a_selector(stack: Stack, root: Api) -> None:
    run = uuid.uuid4().hex[:8]
    made = {
        "a": create(root, f"edit-sel-a-{run}", labels={"run": run, "site": "leeds",
                                                        "env": "a", "plc": ""}),
        "b": create(root, f"edit-sel-b-{run}", labels={"run": run, "site": "leeds",
                                                        "env": "c", "plc": ""}),
        "c": create(root, f"edit-sel-c-{run}", labels={"run": run, "site": "york",
                                                        "env": "b", "legacy": "1"}),
        "d": create(root, f"edit-sel-d-{run}", labels={"run": run, "site": "leeds",
                                                        "env": "b", "tier": "x"}),
    }
    names = {uid: key for key, uid in made.items()}

    def listed(selector: str) -> set[str]:
        r = root.get("/v1/cluster", params={"selector": f"run={run},{selector}",
                                            "limit": "1000"})
        assert r.status_code == 200, r.text
        return {names[c["uuid"]] for c in r.json()["clusters"]}

    assert listed("site=leeds") == {"a", "b", "d"}
    assert listed("site=leeds,tier!=x,env in (a,b),plc,!legacy") == {"a"}
    assert listed("env notin (a, c)") == {"c", "d"}
    assert listed("!plc") == {"c", "d"}
    assert listed("site==york") == {"c"}
    all_clusters = root.get("/v1/cluster", params={"limit": "1000"}).json()["clusters"]
    [row] = [c for c in all_clusters if c["uuid"] == made["c"]]
    assert row["labels"] == {"run": run, "site": "york", "env": "b", "legacy": "1"}
    # relabelled by PATCH, the list follows at once
    assert patch(root, made["c"], {"labels": {"site": "leeds"}}).status_code == 200
    assert listed("site=leeds") == {"a", "b", "c", "d"}
    for bad in ("site=le eds", "env in (a", "site=leeds,", "count>3"):
        r = root.get("/v1/cluster", params={"selector": bad})
        assert r.status_code == 400 and "selector" in r.json()["error"], (bad, r.text)


def test_a_values_patch_gives_a_new_commit_of_the_cluster_repo(stack: Stack,
                                                               root: Api) -> None:
    cluster = create(root, "edit-values", chart=CHART, values={"replicas": 1})
    before = wait_for(lambda: (s := status(stack.admin, cluster)) and s.get("ready") and s,
                      what="ready")["commit"]
    repo = stack.repos / f"{cluster}.git"

    def release(commit: str) -> dict[str, Any]:
        docs = yaml.safe_load_all(bare(repo, "show", f"{commit}:edo/cluster/edge-cluster.yaml"))
        return next(d for d in docs if d and d.get("kind") == "HelmRelease")

    assert release(before)["spec"]["values"]["replicas"] == 1
    assert patch(root, cluster, {"values": {"replicas": 3}}).status_code == 200
    after = wait_for(lambda: (s := status(stack.admin, cluster)) and s.get("commit") != before
                     and s.get("ready") and s, what="a new commit")["commit"]
    assert bare(repo, "rev-parse", f"{after}^").strip() == before
    assert release(after)["spec"]["values"]["replicas"] == 3
    # a labels-only edit changes nothing in the repo: no new commit
    assert patch(root, cluster, {"labels": {"site": "leeds"}}).status_code == 200
    done = wait_for(lambda: (s := status(stack.admin, cluster)) and s.get("ready")
                    and s.get("spec", {}).get("labels") and s, what="the labels reconciled")
    assert done["commit"] == after
