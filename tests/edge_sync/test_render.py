"""Rendering Edge deployments (pure): names, values merge, manifest shapes, bad input."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fplus import manifests
from fplus.config_store.uuids import K8sResource
from fplus.edge_sync.deployments.entry import RenderError
from fplus.edge_sync.deployments.render import (
    ClusterInfo,
    ResourceType,
    k8sname,
    load_templates,
    merge,
    plan,
    render_deployment,
)
from tests.manifests.crds import load_crds

D = "9a1e0000-0000-4000-8000-000000000001"
D2 = "9a1e0000-0000-4000-8000-000000000002"
CHART = "77aa0000-0000-4000-8000-000000000001"
CHART2 = "77aa0000-0000-4000-8000-000000000002"
SOURCE = "5c0e0000-0000-4000-8000-00000000000a"
CLUSTER = ClusterInfo("shop-floor", "EXAMPLE.COM", "https://directory.example.com")
GIT = "https://git.example.com"
HR = ResourceType("helm.toolkit.fluxcd.io/v2", "HelmRelease")
GR = ResourceType("source.toolkit.fluxcd.io/v1", "GitRepository")
EDGE_AGENT = {"chart": "edge-agent", "values": {
    "name": "{{name}}", "uuid": "{{uuid}}", "hostname": "{{hostname}}",
    "authGroup": {"edgeAgent": "a0a0a0a0-0000-4000-8000-000000000000"}}}


@pytest.fixture(scope="module")
def templates():
    seeded = manifests.load("k8s-resource-templates")
    return load_templates({K8sResource.HelmRelease: seeded["HelmRelease"],
                           K8sResource.GitRepository: seeded["GitRepository"]})


@pytest.fixture(scope="module")
def crds():
    return load_crds()


@pytest.mark.parametrize(("parts", "name"), [
    (("edge-agent", D), f"edge-agent-{D}"),
    (("helm", "charts"), "helm-charts"),
    (("Modbus_REST", "X"), "modbus-rest-x"),
    (("a  b!!c",), "a-b-c"),
    (("-a-",), "a"),
    (("--a--",), "-a-"),  # only one dash is trimmed each side, as ACS does
    (("Äb",), "b"),
])
def test_k8sname(parts: tuple[str, ...], name: str) -> None:
    assert k8sname(*parts) == name


@pytest.mark.parametrize(("p1", "p2", "merged"), [
    ({"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
    ({"a": {"x": 1}}, {"a": {"y": 2}}, {"a": {"x": 1, "y": 2}}),
    ({"a": 1}, {"a": None}, {"a": None}),  # null kept, not a deletion
    ({"a": [1, 2, 3]}, {"a": [9]}, {"a": [9, 2, 3]}),  # arrays merge index-wise
    ({"a": [1]}, {"a": [1, [2]]}, {"a": [1, [2]]}),
    ({"a": [1]}, {"a": {"0": 2}}, {"a": {"0": 2}}),  # array meets object: p2
    ({"a": {"x": 1}}, {"a": "s"}, {"a": "s"}),
    (None, {"a": 1}, {"a": 1}),
    ({"a": 1}, None, None),
    ({"a": 1}, 5, 5),
])
def test_merge_is_json_merge_patch_merge(p1: Any, p2: Any, merged: Any) -> None:
    before = copy.deepcopy((p1, p2))
    assert merge(p1, p2) == merged
    assert (p1, p2) == before


def test_helm_release_as_acs_renders_it(templates, crds) -> None:
    spec = {"name": "Machine1", "cluster": "c", "chart": CHART, "hostname": "edge-1",
            "values": {"authGroup": {"extra": True}}}
    [(rtype, hr)] = render_deployment(D, spec, {CHART: EDGE_AGENT}, templates, CLUSTER, None)
    assert rtype == HR
    assert hr == {
        "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": f"edge-agent-{D}",
                     "labels": {"factoryplus.app.amrc.co.uk/uuid": D}},
        "spec": {
            "chart": {"spec": {"chart": "edge-agent", "reconcileStrategy": "Revision",
                               "sourceRef": {"kind": "GitRepository", "name": "helm-charts"}}},
            "install": {"crds": "CreateReplace"}, "upgrade": {"crds": "CreateReplace"},
            "interval": "2m0s", "maxHistory": 1, "driftDetection": {"mode": "enabled"},
            "values": {"cluster": "shop-floor", "realm": "EXAMPLE.COM",
                       "directory_url": "https://directory.example.com", "name": "Machine1",
                       "uuid": D, "hostname": "edge-1",
                       "authGroup": {"edgeAgent": "a0a0a0a0-0000-4000-8000-000000000000",
                                     "extra": True}}}}
    assert crds[(rtype.api_version, rtype.kind)].errors(hr) == []


def test_values_merge_order_and_floating_deployments(templates) -> None:
    chart = {"chart": "x", "values": {"cluster": "from-chart", "realm": "R", "h": "{{hostname}}"}}
    spec = {"name": "n", "chart": CHART, "values": {"realm": "from-spec"}}
    [(_, hr)] = render_deployment(D, spec, {CHART: chart}, templates,
                                  ClusterInfo("c"), None)
    # no hostname: the placeholder renders away; no realm/directory_url configured
    assert hr["spec"]["values"] == {"cluster": "from-chart", "realm": "from-spec"}


def test_chart_source_adds_a_git_repository(templates, crds) -> None:
    chart = {"chart": "modbus-rest", "prefix": "modbus", "source": SOURCE, "values": {}}
    out = render_deployment(D, {"name": "m", "chart": CHART}, {CHART: chart}, templates,
                            CLUSTER, lambda: GIT + "/")
    (_, hr), (gr_type, gr) = out
    assert hr["metadata"]["name"] == f"modbus-{D}"
    assert hr["spec"]["chart"]["spec"]["sourceRef"]["name"] == f"helm-{SOURCE}"
    assert gr_type == GR and gr == {
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": f"helm-{SOURCE}",
                     "labels": {"factoryplus.app.amrc.co.uk/uuid": SOURCE}},
        "spec": {"interval": "3m", "ref": {"branch": "main"},
                 "secretRef": {"name": "flux-secrets"}, "url": f"{GIT}/uuid/{SOURCE}"}}
    assert crds[(gr_type.api_version, gr_type.kind)].errors(gr) == []


def test_legacy_charts_list(templates) -> None:
    other = {"chart": "mqtt", "values": {}}
    out = render_deployment(D, {"name": "n", "charts": [CHART, CHART2]},
                            {CHART: EDGE_AGENT, CHART2: other}, templates, CLUSTER, None)
    assert [m["metadata"]["name"] for _, m in out] == [f"edge-agent-{D}", f"mqtt-{D}"]


@pytest.mark.parametrize(("spec", "charts", "git", "message"), [
    ("not an object", {}, None, "not a JSON object"),
    ({"chart": CHART}, {CHART: EDGE_AGENT}, None, "has no name"),
    ({"name": "n"}, {}, None, "names no chart"),
    ({"name": "n", "chart": "nope"}, {}, None, "must be a Helm chart template UUID"),
    ({"name": "n", "charts": []}, {}, None, "must be a Helm chart template UUID"),
    ({"name": "n", "chart": CHART}, {}, None, "does not exist"),
    ({"name": "n", "chart": CHART, "values": []}, {CHART: EDGE_AGENT}, None,
     "values must be an object"),
    ({"name": "n", "chart": CHART}, {CHART: {"values": {}}}, None, "has no chart name"),
    ({"name": "n", "chart": CHART}, {CHART: {"chart": "x", "source": "s", "values": {}}},
     None, "source must be a UUID"),
    ({"name": "n", "chart": CHART}, {CHART: {"chart": "x", "source": SOURCE, "values": {}}},
     None, "Git server's URL is not known"),
    ({"name": "n", "chart": CHART}, {CHART: {"chart": "x" * 300, "values": {}}}, GIT,
     "not a valid Kubernetes name"),
    ({"name": "n", "charts": [CHART, CHART]}, {CHART: EDGE_AGENT}, GIT, "already wanted"),
])
def test_bad_deployments_are_reported(templates, spec: Any, charts: dict[str, Any],
                                      git: str | None, message: str) -> None:
    result = plan({D: spec, D2: {"name": "ok", "chart": "77aa0000-0000-4000-8000-0000000000ff"}},
                  {**charts, "77aa0000-0000-4000-8000-0000000000ff": EDGE_AGENT}, templates,
                  CLUSTER, git)
    assert message in result.failed[D]
    assert result.releases == {D2: [f"edge-agent-{D2}"]}  # the others still render


def test_unmanaged_types_and_missing_templates_fail() -> None:
    empty = load_templates({})
    with pytest.raises(RenderError, match="no HelmRelease K8s resource template"):
        render_deployment(D, {"name": "n", "chart": CHART}, {CHART: EDGE_AGENT}, empty,
                          CLUSTER, None)
    seeded = manifests.load("k8s-resource-templates")
    unlisted = load_templates({K8sResource.HelmRelease: {**seeded["HelmRelease"],
                                                         "resources": []}})
    with pytest.raises(RenderError, match="not a managed resource type"):
        render_deployment(D, {"name": "n", "chart": CHART}, {CHART: EDGE_AGENT}, unlisted,
                          CLUSTER, None)


def test_plan_collects_manifests_and_shares_sources(templates) -> None:
    chart = {"chart": "modbus-rest", "source": SOURCE, "values": {}}
    asked: list[int] = []

    def git() -> str:
        asked.append(1)
        return GIT

    result = plan({D: {"name": "a", "chart": CHART}, D2: {"name": "b", "chart": CHART}},
                  {CHART: chart}, templates, CLUSTER, git)
    assert result.failed == {}
    assert set(result.manifests[HR]) == {f"modbus-rest-{D}", f"modbus-rest-{D2}"}
    assert set(result.manifests[GR]) == {f"helm-{SOURCE}"}
    assert result.types == frozenset({HR, GR})
    assert asked == [1]  # the Git URL is looked up once per pass
    assert plan({}, {}, templates, CLUSTER, git).manifests == {HR: {}, GR: {}}
    assert asked == [1]  # and not at all when no chart needs it
