"""deploy/components/monitoring: the PrometheusRule and the Grafana dashboard build with the
real ``kubectl kustomize``, the rule validates against a PrometheusRule schema (our own:
``tests/deploy/crds/``, as the shared CRDs have none), and every metric either names is one the
services export."""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from prometheus_client import CollectorRegistry

from fplus.cluster_manager.leader.elector import LeaderStatus
from fplus.cluster_manager.metrics import Metrics
from fplus.config_store._http.notify_metrics import track_notify
from fplus.git_server._http.metrics import GitMetrics
from fplus.serving.http.metrics import HttpMetrics
from tests.deploy.conftest import DEPLOY, Objects, kustomize, of_kind
from tests.manifests.crds import CustomResource, load_crds

OWN_CRDS = Path(__file__).resolve().parent / "crds"
COMPONENT = DEPLOY / "components" / "monitoring"
METRIC = re.compile(r"\b(?:cluster_manager|config_store|git_server)_[a-z0-9_]+")
DURATION = re.compile(r"^[0-9]+(ms|s|m|h|d|w|y)$")


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Objects:
    """The base with the monitoring component, from an overlay in a temp dir."""
    overlay = tmp_path_factory.mktemp("monitoring")
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "namespace": "fplus", "resources": [os.path.relpath(DEPLOY / "base", overlay)],
        "components": [os.path.relpath(COMPONENT, overlay)]}))
    return kustomize(overlay)


@pytest.fixture(scope="module")
def rule(build: Objects) -> dict[str, Any]:
    [found] = of_kind(build, "PrometheusRule")
    return found


@pytest.fixture(scope="module")
def schema() -> CustomResource:
    return load_crds(OWN_CRDS)[("monitoring.coreos.com/v1", "PrometheusRule")]


def exported_metrics() -> set[str]:
    """The name of every sample the three services can export (histograms' and counters'
    suffixed names included), from their own registries."""
    manager = Metrics()
    manager.track_leadership(lambda: LeaderStatus("a", True, "a"))
    manager.track_sync(lambda: {"Synced": 1})
    manager.track_fleet(lambda: {"ready": 1})
    manager.track_drift(lambda: 1)
    manager.track_phases(lambda: {"Failed": 1}, lambda: 1)
    manager.track_reseals(lambda: 1)
    manager.reconcile_seconds.labels("ok").observe(0)
    manager.seals.labels("seal", "sealed").inc()
    manager.bootstrap.labels("url", "issued").inc()
    manager.errors.labels("http").inc()

    class Sessions:
        def queues(self) -> list[tuple[int, int]]:
            return []

    store = HttpMetrics("config_store")
    track_notify(store.registry, Sessions())  # type: ignore[arg-type]
    git = GitMetrics()
    for metrics in (store, git):
        metrics.requests.labels("/r", "GET", "200").inc()
        metrics.latency.labels("/r").observe(0)
    git.pushes.labels("200").inc()
    git.fetches.labels("200").inc()
    return {sample.name for registry in (manager.registry, store.registry, git.registry)
            for family in _collect(registry) for sample in family.samples}


def _collect(registry: CollectorRegistry) -> Iterator[Any]:
    yield from registry.collect()


def _rules(rule: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for group in rule["spec"]["groups"]:
        yield from group["rules"]


def dashboard(build: Objects) -> dict[str, Any]:
    [config_map] = [obj for obj in of_kind(build, "ConfigMap")
                    if obj["metadata"]["name"] == "fplus-grafana-dashboard"]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    return json.loads(config_map["data"]["fplus-dashboard.json"])


def test_the_rule_validates_against_the_prometheusrule_schema(
        rule: dict[str, Any], schema: CustomResource) -> None:
    assert rule["metadata"]["namespace"] == "fplus"
    assert schema.errors(rule) == []


def test_the_schema_refuses_a_wrong_rule(rule: dict[str, Any], schema: CustomResource) -> None:
    bad = copy.deepcopy(rule)
    bad["spec"]["groups"][0]["rules"][0]["for"] = "two minutes"
    bad["spec"]["groups"][0]["rules"][1]["severity"] = "page"  # belongs in labels
    del bad["spec"]["groups"][1]["rules"][0]["expr"]
    errors = schema.errors(bad)
    assert any("two minutes" in e for e in errors), errors
    assert any("severity" in e for e in errors), errors
    assert any("'expr' is a required property" in e for e in errors), errors


def test_each_rule_is_an_alert_with_severity_summary_and_a_duration(
        rule: dict[str, Any]) -> None:
    names = []
    for one in _rules(rule):
        assert ("alert" in one) != ("record" in one), one
        names.append(one["alert"])
        assert DURATION.match(one["for"]), one
        assert one["labels"]["severity"] in ("critical", "warning", "info"), one
        assert one["annotations"]["summary"] and one["annotations"]["description"], one
        assert one["expr"].count("(") == one["expr"].count(")"), one
    assert len(names) == len(set(names))
    assert {"FplusLeaderLost", "FplusSyncDegraded", "FplusClusterFailed", "FplusEdgeStale",
            "FplusResealPending"} <= set(names)


def test_rules_and_dashboard_name_only_exported_metrics(build: Objects,
                                                        rule: dict[str, Any]) -> None:
    exported = exported_metrics()
    exprs = [one["expr"] for one in _rules(rule)]
    exprs += [target["expr"] for panel in dashboard(build)["panels"]
              for target in panel.get("targets", [])]
    named = {name for expr in exprs for name in METRIC.findall(expr)}
    assert named - exported == set()
    # and the check can tell: a misspelt name is not exported
    assert "cluster_manager_clusters_phase" not in exported
    assert {"cluster_manager_clusters", "cluster_manager_edges_stale",
            "cluster_manager_reseals_pending"} <= named  # the fleet's phases are watched


def test_dashboard_is_a_grafana_dashboard(build: Objects) -> None:
    board = dashboard(build)
    assert board["uid"] == "fplus-edge-manager" and board["title"]
    assert isinstance(board["schemaVersion"], int)
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        assert {"x", "y", "w", "h"} <= set(panel["gridPos"])
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        if panel["type"] != "row":
            assert panel["targets"] and all(t["expr"] for t in panel["targets"]), panel
            assert [t["refId"] for t in panel["targets"]] == \
                [chr(65 + i) for i in range(len(panel["targets"]))]
    variables = {v["name"] for v in board["templating"]["list"]}
    assert "datasource" in variables


def test_the_config_map_passes_strict_validation(build: Objects) -> None:
    [config_map] = [obj for obj in of_kind(build, "ConfigMap")
                    if obj["metadata"]["name"] == "fplus-grafana-dashboard"]
    kubernetes_validate.validate(config_map, "1.29.0", strict=True)
