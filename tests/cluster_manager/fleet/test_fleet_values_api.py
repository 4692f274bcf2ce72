"""Values from cluster metadata on the real services: a fleet deployment's placeholders,
customizations, profiles and overrides reach each cluster's Edge deployment entry (and
``GET /v1/cluster/:c/deployment``); a placeholder one cluster has no value for fails that
cluster alone; per-cluster deployments resolve theirs as they are written; the request
checks name the refused field and write nothing."""

from __future__ import annotations

import uuid
from typing import Any

from harness.servers import Api
from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.fleet.conftest import CHART
from tests.cluster_manager.fleet.test_change_previews import ready_cluster
from tests.cluster_manager.fleet.test_fleet_api import (
    create,
    deployments,
    of_fleet,
    relabel,
    settled,
)

MISSING = "values: {{cluster.labels.site}} has no value on this cluster and no default"


def tag() -> str:
    return uuid.uuid4().hex[:8]


def rolled_up(root: Api, fleet: str) -> dict[str, dict[str, Any]]:
    """The fleet deployment's roll-up, by cluster."""
    r = root.get(f"/v1/fleet-deployment/{fleet}")
    assert r.status_code == 200, r.text
    return {c["cluster"]: c for c in r.json()["clusters"]}


def test_labels_flow_into_each_clusters_entry_and_a_missing_one_fails_alone(
        stack: Stack, root: Api) -> None:
    group = f"g{tag()}"
    leeds = create_cluster(stack.admin, f"leeds-{group}", labels={
        "group": group, "site": "leeds", "profile": "big"})
    york = create_cluster(stack.admin, f"york-{group}", namespace="york-edge",
                          labels={"group": group, "site": "york", "tier": "line"})
    bare = create_cluster(stack.admin, f"bare-{group}", labels={"group": group})
    fleet = create(root, name=f"historian-{group}", selector={"matchLabels": {"group": group}},
                   values={"broker": "mqtt.{{cluster.labels.site}}.example:1883",
                           "node": "{{cluster.name}}@{{cluster.namespace}}", "size": 1,
                           "tpl": "{{ .Release.Name }}"},
                   customizations=[{"selector": {"matchLabels": {"tier": "line"}},
                                    "values": {"size": 2}}],
                   profiles={"big": {"size": 5}}, overrides={york: {"extra": True}})["uuid"]

    found = settled(stack, fleet, {leeds, york})
    entries = {c: deployments(stack, fleetDeployment=fleet)[d]["values"]
               for c, d in found.items()}
    assert entries == {
        leeds: {"broker": "mqtt.leeds.example:1883", "node": f"leeds-{group}@fplus-edge",
                "size": 5, "tpl": "{{ .Release.Name }}"},
        york: {"broker": "mqtt.york.example:1883", "node": f"york-{group}@york-edge",
               "size": 2, "tpl": "{{ .Release.Name }}", "extra": True}}
    listed = root.get(f"/v1/cluster/{york}/deployment").json()["deployments"]
    assert [d["values"] for d in listed if d["uuid"] == found[york]] == [entries[york]]

    roll = wait_for(lambda: (r := rolled_up(root, fleet))[bare]["state"] == "failed" and r,
                    what="the unlabelled cluster failed")
    assert MISSING in roll[bare]["message"]
    assert roll[leeds]["state"] != "failed" and roll[york]["state"] != "failed"

    relabel(stack, bare, {"group": group, "site": "hull"})
    settled(stack, fleet, {leeds, york, bare})
    values = deployments(stack, fleetDeployment=fleet)[of_fleet(stack, fleet)[bare]]["values"]
    assert values["broker"] == "mqtt.hull.example:1883"


def test_a_label_change_rewrites_the_values(stack: Stack, root: Api) -> None:
    group = f"g{tag()}"
    cluster = create_cluster(stack.admin, f"mv-{group}", labels={"group": group, "site": "a"})
    fleet = create(root, name=f"mv-{group}", selector={"matchLabels": {"group": group}},
                   values={"site": "{{cluster.labels.site}}"})["uuid"]
    member = settled(stack, fleet, {cluster})[cluster]
    relabel(stack, cluster, {"group": group, "site": "b"})
    wait_for(lambda: deployments(stack, fleetDeployment=fleet)[member]["values"] ==
             {"site": "b"}, what="the values following the label")


def test_the_request_checks_name_the_field(stack: Stack, root: Api) -> None:
    before = sorted(root.get("/v1/fleet-deployment").json(), key=str)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"customizations": [{"selector": {}}]}, "customizations[0]"),
        ({"profiles": {"not a name": {}}}, "profiles.not a name"),
        ({"profileLabel": "a b"}, "profileLabel"),
        ({"values": {"x": "{{cluster.nmae}}"}}, "values")]
    for extra, field in cases:
        r = root.post("/v1/fleet-deployment", json={
            "chart": CHART, "name": f"bad-{tag()}", "selector": {}, **extra})
        assert r.status_code == 422 and r.json()["error"].startswith(f"{field}: "), r.text
    assert sorted(root.get("/v1/fleet-deployment").json(), key=str) == before


def test_dry_run_shows_each_clusters_resolved_values(stack: Stack, root: Api) -> None:
    group = f"g{tag()}"
    cluster, _ = ready_cluster(stack, f"dry-{group}", labels={"group": group, "site": "leeds"})
    r = root.post("/v1/fleet-deployment?dryRun", json={
        "name": f"dry-{group}", "chart": CHART, "selector": {"matchLabels": {"group": group}},
        "values": {"broker": "{{cluster.labels.site}}"}})
    assert r.status_code == 200, r.text
    [shown] = r.json()["clusters"]
    assert shown["uuid"] == cluster and '"broker": "leeds"' in shown["diff"]


def test_a_per_cluster_deployment_resolves_at_write(stack: Stack, root: Api) -> None:
    cluster = create_cluster(stack.admin, f"pc-{tag()}", labels={"site": "leeds"})
    path = f"/v1/cluster/{cluster}/deployment"
    r = root.post(path, json={"name": "broker", "chart": CHART, "values": {
        "site": "{{cluster.labels.site}}", "uuid": "{{cluster.uuid}}"}})
    assert r.status_code == 201, r.text
    assert r.json()["values"] == {"site": "leeds", "uuid": cluster}
    assert deployments(stack, cluster=cluster)[r.json()["uuid"]]["values"] == \
        {"site": "leeds", "uuid": cluster}

    r = root.post(path, json={"name": "other", "chart": CHART,
                              "values": {"line": "{{cluster.labels.line}}"}})
    assert r.status_code == 422 and "{{cluster.labels.line}}" in r.json()["error"], r.text
    assert [d["name"] for d in root.get(path).json()["deployments"]] == ["broker"]
