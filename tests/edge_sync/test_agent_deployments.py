"""Edge deployments → HelmReleases / GitRepositories: create, update, prune, bad input."""

from __future__ import annotations

from typing import Any

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.edge_sync.deployments.apply import MANAGED_BY, MANAGER
from fplus.edge_sync.deployments.render import UUID_LABEL
from tests.edge_sync.conftest import StartAgent
from tests.edge_sync.emulator import GIT_REPOSITORIES, HELM_RELEASES, KubeHarness
from tests.edge_sync.helpers import (
    NAMESPACE,
    Edge,
    chart_template,
    deployment,
    make_edge,
    new_uuid,
    status,
    wait_for,
)

DEPLOYMENT = uuids.App.EdgeDeployment


def releases(kube: KubeHarness) -> dict[str, dict[str, Any]]:
    return kube.objects(HELM_RELEASES, NAMESPACE)


def deployments_status(cs: ConfigStoreClient, edge: Edge) -> dict[str, Any]:
    return status(cs, edge).get("deployments") or {}


def test_create_update_and_prune(cs_admin: ConfigStoreClient, edge: Edge, kube: KubeHarness,
                                 start_agent: StartAgent) -> None:
    chart = chart_template(cs_admin)
    d = deployment(cs_admin, edge, chart, hostname="edge-1", values={"extra": {"a": 1}})
    other_edge = make_edge(cs_admin)
    deployment(cs_admin, other_edge, chart, name="NotMine")
    # objects made by others (the cluster repo) carry no managed-by label of ours
    foreign = {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
               "metadata": {"name": f"edge-cluster-{edge.uuid}", "namespace": NAMESPACE}}
    kube.put(HELM_RELEASES, NAMESPACE, foreign["metadata"]["name"], foreign)
    start_agent(edge)

    name = f"edge-agent-{d}"
    wait_for(lambda: name in releases(kube), what="the HelmRelease")
    hr = releases(kube)[name]
    assert hr["metadata"]["labels"] == {UUID_LABEL: d, MANAGED_BY: MANAGER}
    assert hr["metadata"]["namespace"] == NAMESPACE
    assert hr["metadata"]["managedFields"] == [{"manager": MANAGER, "operation": "Apply"}]
    assert hr["spec"]["chart"]["spec"] == {
        "chart": "edge-agent", "reconcileStrategy": "Revision",
        "sourceRef": {"kind": "GitRepository", "name": "helm-charts"}}
    assert hr["spec"]["values"] == {
        "cluster": edge.name, "realm": "EXAMPLE.COM",
        "directory_url": "https://directory.example.com", "name": "Machine1", "uuid": d,
        "hostname": "edge-1", "authGroup": {"edgeAgent": "6b5c7c8e-0000-4000-8000-000000000001"},
        "extra": {"a": 1}}
    assert set(releases(kube)) == {name, foreign["metadata"]["name"]}  # not NotMine's
    patches = [r for r in kube.requests(f"/helmreleases/{name}") if r.method == "PATCH"]
    assert patches[0].params["fieldManager"] == MANAGER
    assert patches[0].params["force"].lower() == "true"
    wait_for(lambda: deployments_status(cs_admin, edge).get("releases") == [name],
             what="the release in the status")

    cs_admin.patch_config(DEPLOYMENT, d, {"values": {"extra": {"a": None, "b": 2}}})
    wait_for(lambda: releases(kube)[name]["spec"]["values"].get("extra") == {"b": 2},
             what="the updated values")

    cs_admin.delete_config(DEPLOYMENT, d)
    wait_for(lambda: name not in releases(kube), what="the HelmRelease pruned")
    assert foreign["metadata"]["name"] in releases(kube)  # never touched
    wait_for(lambda: deployments_status(cs_admin, edge).get("releases") == [],
             what="no release in the status")


def test_chart_sources_become_shared_git_repositories(
        cs_admin: ConfigStoreClient, edge: Edge, kube: KubeHarness,
        start_agent: StartAgent) -> None:
    source = new_uuid()
    chart = chart_template(cs_admin, "modbus-rest", source=source, prefix="Modbus_REST",
                           values={"name": "{{name}}"})
    first = deployment(cs_admin, edge, chart, name="m1")
    second = deployment(cs_admin, edge, chart, name="m2")
    # the Flux self-link (not ours) tells where the Git server is
    self_link = {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
                 "metadata": {"name": "self-link", "namespace": NAMESPACE},
                 "spec": {"url": f"https://git.example.com/uuid/{edge.uuid}"}}
    kube.put(GIT_REPOSITORIES, NAMESPACE, "self-link", self_link)
    start_agent(edge)

    repo = f"helm-{source}"
    wait_for(lambda: {f"modbus-rest-{first}", f"modbus-rest-{second}"} <= set(releases(kube)),
             what="both releases")
    repos = kube.objects(GIT_REPOSITORIES, NAMESPACE)
    assert set(repos) == {"self-link", repo}
    assert repos[repo]["spec"]["url"] == f"https://git.example.com/uuid/{source}"
    assert repos[repo]["metadata"]["labels"] == {UUID_LABEL: source, MANAGED_BY: MANAGER}
    assert releases(kube)[f"modbus-rest-{first}"]["spec"]["chart"]["spec"]["sourceRef"] == {
        "kind": "GitRepository", "name": repo}

    cs_admin.delete_config(DEPLOYMENT, first)
    wait_for(lambda: f"modbus-rest-{first}" not in releases(kube), what="first pruned")
    assert repo in kube.objects(GIT_REPOSITORIES, NAMESPACE)  # still used by the second
    cs_admin.delete_config(DEPLOYMENT, second)
    wait_for(lambda: set(kube.objects(GIT_REPOSITORIES, NAMESPACE)) == {"self-link"},
             what="the unused source pruned")


def test_bad_entries_are_reported_and_never_prune_others(
        cs_admin: ConfigStoreClient, edge: Edge, kube: KubeHarness,
        start_agent: StartAgent) -> None:
    good_chart, doomed_chart = chart_template(cs_admin), chart_template(cs_admin, "mqtt")
    good = deployment(cs_admin, edge, good_chart, name="good")
    doomed = deployment(cs_admin, edge, doomed_chart, name="doomed")
    start_agent(edge)
    wait_for(lambda: {f"edge-agent-{good}", f"mqtt-{doomed}"} <= set(releases(kube)),
             what="both releases")

    no_chart = cs_admin.create_object(uuids.Class.EdgeDeployment)
    # the app's schema refuses such an entry now; one stored before it was seeded remains
    schema = cs_admin.get_config(uuids.App.ConfigSchema, DEPLOYMENT)
    cs_admin.delete_config(uuids.App.ConfigSchema, DEPLOYMENT)
    cs_admin.put_config(DEPLOYMENT, no_chart, {"name": "broken", "cluster": edge.uuid})
    missing = deployment(cs_admin, edge, new_uuid(), name="missing")
    cs_admin.delete_config(uuids.App.HelmChartTemplate, doomed_chart)  # ACS would prune

    def failed() -> dict[str, str]:
        return {f["uuid"]: f["error"]
                for f in deployments_status(cs_admin, edge).get("failed", [])}

    wait_for(lambda: set(failed()) == {no_chart, missing, doomed}, what="three failures")
    assert "names no chart" in failed()[no_chart]
    assert "does not exist" in failed()[missing] and "does not exist" in failed()[doomed]
    assert {f"edge-agent-{good}", f"mqtt-{doomed}"} <= set(releases(kube))  # nothing pruned

    cs_admin.put_config(DEPLOYMENT, no_chart,
                        {"name": "fixed", "cluster": edge.uuid, "chart": good_chart})
    wait_for(lambda: f"edge-agent-{no_chart}" in releases(kube), what="the fixed entry")
    cs_admin.put_config(uuids.App.ConfigSchema, DEPLOYMENT, schema)  # every entry fits again


def test_unreadable_inputs_hold_every_release(
        cs_admin: ConfigStoreClient, kube: KubeHarness, start_agent: StartAgent) -> None:
    """Without read access the inputs are unknown, not empty: nothing is pruned."""
    edge = make_edge(cs_admin)
    service = cs_admin.get_config(uuids.App.ServiceConfig, uuids.Service.Clusters)
    cs_admin.remove_member(service["group"]["sync"]["uuid"], edge.principal)
    ours = {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
            "metadata": {"name": "edge-agent-old", "namespace": NAMESPACE,
                         "labels": {MANAGED_BY: MANAGER}}}
    kube.put(HELM_RELEASES, NAMESPACE, "edge-agent-old", ours)
    agent = start_agent(edge)
    assert agent.deployments.wait_initial(10)
    wait_for(lambda: status(cs_admin, edge).get("lastSeen"), what="a heartbeat")
    assert agent.deployments.snapshot() is None
    assert "edge-agent-old" in releases(kube)
    assert not [r for r in kube.requests("/helmreleases") if r.method == "DELETE"]
    assert "deployments" not in status(cs_admin, edge)
