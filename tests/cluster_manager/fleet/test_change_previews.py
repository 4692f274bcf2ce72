"""Refusals and previews on the real services: each kind of refusal (a chart the charts repo
lacks, values a chart's ``values.schema.json`` refuses, a Flux template that does not render,
a Flux version never imported) is a 422 naming the cluster, the field and what to do, with
nothing written; a fleet deployment's ``?dryRun`` on POST and PATCH shows each cluster's Edge
deployment with its resolved values and writes nothing; Secret and SealedSecret data show
only as changed."""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

import requests

from fplus.config_store import uuids
from harness.central import import_chart
from harness.servers import Api
from harness.stack import Stack, create_cluster, status, wait_for
from tests.cluster_manager.fleet.conftest import CHART

CONFIG, FLEET = uuids.App.EdgeClusterConfiguration, uuids.App.FleetDeployment
ROLLOUT, DEPLOYMENT = uuids.App.ClusterRollout, uuids.App.EdgeDeployment
TEMPLATE_APP = uuids.App.FluxTemplate
MERGE = {"Content-Type": "application/merge-patch+json"}
SCHEMA = {"type": "object", "properties": {"replicas": {"type": "integer"}}}
FIRST, SECOND = "first-Secret-1f2e", "second-Secret-9c8d"
SEALED, RESEALED = "AgB7sealed-Vq4", "AgC9sealed-Xw2"


def tag() -> str:
    return uuid.uuid4().hex[:8]


def ready_cluster(stack: Stack, name: str, **extra: Any) -> tuple[str, str]:
    """A commissioned cluster and its repo's commit."""
    cluster = create_cluster(stack.admin, name, **extra)
    commit: str = wait_for(lambda: (status(stack.admin, cluster) or {}).get("commit"),
                           timeout=120, what=f"{name} commissioned")
    return cluster, commit


def snapshot(stack: Stack, cluster: str) -> tuple[object, ...]:
    """What a refused change or a preview must leave as it was: the configurations, fleet
    deployments, rollouts and Edge deployments stored, and ``cluster``'s entry and commit."""
    def listed(app: str) -> list[str]:
        return sorted(stack.admin.get(f"/v1/app/{app}/object").json())

    return (*(listed(app) for app in (CONFIG, FLEET, ROLLOUT, DEPLOYMENT)),
            stack.admin.get(f"/v2/app/{CONFIG}/object/{cluster}").json(),
            (status(stack.admin, cluster) or {}).get("commit"))


def chart_template(stack: Stack, chart: str, values: dict[str, object] | None = None) -> str:
    """A Helm chart template of ``chart`` (imported or not)."""
    made = stack.admin.post("/v2/object", json={"class": uuids.Class.HelmChart}).json()["uuid"]
    r = stack.admin.put(f"/v2/app/{uuids.App.HelmChartTemplate}/object/{made}",
                        json={"chart": chart, "values": values or {}})
    assert r.status_code in (201, 204), r.text
    return str(made)


def refused(resp: requests.Response, cluster: str, name: str, field: str) -> str:
    """The message of the 422 ``resp`` refusing ``cluster`` (named ``name``) on ``field``."""
    assert resp.status_code == 422, resp.text
    body = resp.json()
    assert "nothing was written" in body["error"]
    assert f"cluster {name} ({cluster}): {field}: " in body["error"]
    [found] = [r for r in body["refused"] if r["uuid"] == cluster]
    assert found["name"] == name and found["field"] == field, found
    message: str = found["message"]
    return message


def test_a_chart_not_in_the_charts_repo_is_refused(stack: Stack, root: Api) -> None:
    name = f"pv-chart-{tag()}"
    cluster, _ = ready_cluster(stack, name)
    missing = f"absent-{tag()}"
    template = chart_template(stack, missing)
    before = snapshot(stack, cluster)

    fix = f"import it with `fplus chart import {missing}-<version>.tgz` (or `POST /v1/chart`)"
    message = refused(root.post("/v1/fleet-deployment", json={
        "name": "absent", "chart": template, "clusters": [cluster]}), cluster, name, "chart")
    assert f"chart {missing} is not in the shared charts repo" in message and fix in message
    message = refused(root.patch(f"/v1/cluster/{cluster}", json={"chart": template},
                                 headers=MERGE), cluster, name, "chart")
    # a cluster's own chart may be a system chart, which only the command line imports
    assert f"`cluster-manager import-chart --system-chart {missing}-<version>.tgz`" in message
    assert f"`fplus chart import {missing}-<version>.tgz`" in message
    preview = root.post("/v1/fleet-deployment?dryRun", json={
        "name": "absent", "chart": template, "clusters": [cluster]})
    assert preview.status_code == 200, preview.text
    assert preview.json()["refused"][0]["field"] == "chart"
    assert snapshot(stack, cluster) == before


def test_values_a_charts_schema_refuses_are_refused(stack: Stack, root: Api) -> None:
    name = f"pv-schema-{tag()}"
    cluster, _ = ready_cluster(stack, name)
    chart = f"strict-{tag()}"
    import_chart(root, chart, extra={"values.schema.json": json.dumps(SCHEMA).encode()})
    template = chart_template(stack, chart)
    before = snapshot(stack, cluster)

    body = {"name": "strict", "chart": template, "clusters": [cluster],
            "values": {"replicas": "many"}}
    message = refused(root.post("/v1/fleet-deployment", json=body), cluster, name, "values")
    assert f"the values of chart {chart} are refused by its values.schema.json at " \
           "replicas: 'many' is not of type 'integer'" in message
    message = refused(root.patch(f"/v1/cluster/{cluster}", json={
        "chart": template, "values": {"replicas": "many"}}, headers=MERGE),
        cluster, name, "values")
    assert "values.schema.json at replicas" in message
    assert snapshot(stack, cluster) == before
    # values the schema takes are taken
    r = root.post("/v1/fleet-deployment?dryRun", json=body | {"values": {"replicas": 2}})
    assert r.status_code == 200 and r.json()["refused"] == [], r.text


def test_a_flux_template_that_does_not_render_is_refused(stack: Stack, root: Api) -> None:
    name = f"pv-tpl-{tag()}"
    cluster, _ = ready_cluster(stack, name)
    default = stack.admin.get(f"/v2/app/{TEMPLATE_APP}/object/{TEMPLATE_APP}").json()
    candidate = default | {"extra.yaml": "{{ values }}"}  # renders to an object, not a list
    before = snapshot(stack, cluster)

    body = {"name": f"tpl-{tag()}", "change": {"fluxTemplate": candidate},
            "clusters": [cluster]}
    message = refused(root.post("/v1/rollout", json=body), cluster, name, "fluxTemplate")
    assert "Flux template extra.yaml: expected a list of manifests" in message
    preview = root.post("/v1/rollout?dryRun", json=body)
    assert preview.status_code == 200, preview.text
    [shown] = preview.json()["clusters"]
    assert shown["refused"]["field"] == "fluxTemplate" and shown["diff"] == ""
    assert snapshot(stack, cluster) == before


def test_a_flux_version_never_imported_is_refused(stack: Stack, root: Api) -> None:
    name = f"pv-flux-{tag()}"
    cluster, _ = ready_cluster(stack, name)
    before = snapshot(stack, cluster)
    fix = "import it with `fplus flux import FILE`"

    for resp in (root.patch(f"/v1/cluster/{cluster}", json={"fluxVersion": "6.6.6"},
                            headers=MERGE),
                 root.post("/v1/rollout", json={"name": f"up-{tag()}", "clusters": [cluster],
                                                "change": {"fluxVersion": "v6.6.6"}})):
        message = refused(resp, cluster, name, "fluxVersion")
        assert "Flux v6.6.6 is not in the central Flux repo" in message and fix in message
        assert "POST /v1/flux-version" in message
    made = root.post("/v1/cluster", json={"name": f"pv-new-{tag()}", "namespace": "fplus-edge",
                                          "fluxVersion": "v6.6.6"})
    assert made.status_code == 422 and fix in made.json()["error"], made.text
    assert made.json()["refused"][0]["field"] == "fluxVersion"
    assert snapshot(stack, cluster) == before


def test_fleet_deployment_dry_run_shows_resolved_values_and_writes_nothing(
        stack: Stack, root: Api) -> None:
    run = tag()
    name = f"pv-fleet-{run}"
    cluster, _ = ready_cluster(stack, name, labels={"pv": run})
    other, _ = ready_cluster(stack, f"pv-other-{run}", labels={"pv": "no"})
    before = snapshot(stack, cluster)
    body = {"name": f"hist-{run}", "chart": CHART, "selector": {"matchLabels": {"pv": run}},
            "values": {"colour": "blue", "size": 1},
            "overrides": {cluster: {"size": 3}}}

    r = root.post("/v1/fleet-deployment?dryRun", json=body)
    assert r.status_code == 200, r.text
    [shown] = r.json()["clusters"]  # the other cluster is not selected
    assert shown["uuid"] == cluster and shown["name"] == name and "refused" not in shown
    assert shown["deployments"] == {"added": [f"hist-{run}"], "changed": [], "removed": []}
    assert shown["files"] == {"added": [], "changed": [], "removed": []}
    diff = shown["diff"]
    assert f"+++ b/deployment/hist-{run}" in diff
    assert '+    "colour": "blue",' in diff and '+    "size": 3' in diff  # resolved, overridden
    assert r.json()["plan"]["steps"] == [{"clusters": [{"uuid": cluster, "name": name}]}]
    assert snapshot(stack, cluster) == before and other not in diff

    made = root.post("/v1/fleet-deployment", json=body)
    assert made.status_code == 201, made.text
    fleet = made.json()["uuid"]
    owned = {"fleetDeployment": json.dumps(fleet)}
    wait_for(lambda: stack.admin.get(f"/v1/app/{DEPLOYMENT}/search", params=owned).json(),
             timeout=60, what="its Edge deployment")
    etag = root.get(f"/v1/fleet-deployment/{fleet}").headers["ETag"]
    before = snapshot(stack, cluster)

    r = root.patch(f"/v1/fleet-deployment/{fleet}?dryRun", json={"values": {"colour": "green"}},
                   headers=MERGE)
    assert r.status_code == 200, r.text
    [shown] = r.json()["clusters"]
    assert shown["deployments"] == {"added": [], "changed": [f"hist-{run}"], "removed": []}
    assert '-    "colour": "blue",' in shown["diff"] and '+    "colour": "green",' in shown["diff"]
    assert '"size": 3' in shown["diff"]  # the override still resolved into the values
    r = root.patch(f"/v1/fleet-deployment/{fleet}?dryRun",
                   json={"selector": {"matchLabels": {"pv": "no"}}}, headers=MERGE)
    moved = {c["uuid"]: c["deployments"] for c in r.json()["clusters"]}
    assert moved == {cluster: {"added": [], "changed": [], "removed": [f"hist-{run}"]},
                     other: {"added": [f"hist-{run}"], "changed": [], "removed": []}}
    assert snapshot(stack, cluster) == before
    assert root.get(f"/v1/fleet-deployment/{fleet}").headers["ETag"] == etag


def secret_files() -> dict[str, list[dict[str, object]]]:
    """A template file of a Secret and a SealedSecret holding the cluster's values."""
    meta = {"name": "creds", "namespace": "{{ namespace }}"}
    return {"creds.yaml": [
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta,
         "stringData": {"password": "{{ values.password }}", "user": "edge"}},
        {"apiVersion": "bitnami.com/v1alpha1", "kind": "SealedSecret", "metadata": meta,
         "spec": {"encryptedData": {"token": "{{ values.sealed }}"}}}]}


def test_secret_data_shows_only_as_changed(stack: Stack, root: Api) -> None:
    name = f"pv-secret-{tag()}"
    cluster, _ = ready_cluster(stack, name, values={"password": FIRST, "sealed": SEALED})
    path = f"/v2/app/{TEMPLATE_APP}/object/{TEMPLATE_APP}"
    default = stack.admin.get(path).json()
    candidate = copy.deepcopy(default) | secret_files()

    r = root.post("/v1/rollout?dryRun", json={"name": f"creds-{tag()}", "clusters": [cluster],
                                              "change": {"fluxTemplate": candidate}})
    assert r.status_code == 200, r.text
    [shown] = r.json()["clusters"]
    assert shown["files"]["added"] == ["edo/cluster/creds.yaml"]
    assert "+  password: <hidden, changed>" in shown["diff"]
    assert "+    token: <hidden, changed>" in shown["diff"]
    assert FIRST not in r.text and SEALED not in r.text

    assert stack.admin.put(path, json=candidate).status_code in (201, 204)
    try:
        r = root.patch(f"/v1/cluster/{cluster}?dryRun", json={"values": {
            "password": SECOND, "sealed": RESEALED}},
                       headers=MERGE)
        assert r.status_code == 200, r.text
        [shown] = r.json()["clusters"]
        assert shown["files"]["changed"] == ["edo/cluster/creds.yaml"]
        assert "-  password: <hidden>" in shown["diff"]
        assert "+  password: <hidden, changed>" in shown["diff"]
        assert "\n   user: <hidden>\n" in shown["diff"]  # unchanged: no mark
        assert "-    token: <hidden>" in shown["diff"]
        assert "+    token: <hidden, changed>" in shown["diff"]
        assert not any(s in r.text for s in (FIRST, SECOND, SEALED, RESEALED))
    finally:
        assert stack.admin.put(path, json=default).status_code in (201, 204)
