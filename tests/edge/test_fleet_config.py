"""Fleet configuration on real edges: two clusters, ``leeds`` and ``york`` (labelled
``site=<name>``), each bootstrapped onto an edge of its own, started side by side.

- **Values from labels.** A fleet deployment whose values say ``{{cluster.labels.site}}``
  reaches both clusters with their own values: in each cluster's deployment list, in the
  HelmRelease Edge Sync applied and in the ConfigMap the real helm-controller installed.
- **Order.** On ``leeds``, deployment ``broker`` is held back (its chart fails while its
  values say ``hold``); ``historian``, which ``dependsOn: [broker]``, gets a HelmRelease whose
  ``spec.dependsOn`` names broker's, and helm-controller reports it ``DependencyNotReady``
  and installs nothing (no Helm release, no ConfigMap), however often it is asked. Let go,
  broker becomes Ready and only then is historian installed.
- **Drift.** A fleet deployment with ``driftDetection: warn``: its ConfigMap on ``york``
  edited by hand is reported drifted (the roll-up counts one, york's deployment list says
  so) and left as edited; changed to ``enabled``, helm-controller puts it back and the
  report clears.

One chart, ``cfg``, serves every deployment: a ConfigMap of its values, and a template
failure while ``hold`` is set.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from fplus.cluster_manager.rollouts.fleet_entry import member_uuid
from harness import edgetools
from harness.realedge import Edge, started_edges
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, wait_for
from tests.edge.conftest import Fplus, bootstrap, condition, wait_ready

SITES = ("leeds", "york")
"""The clusters, each labelled ``site=<its name>`` and ``fleet=cfg``."""
CHART = "cfg"
CFG_CHART = """{{- if .Values.hold }}
{{- fail "held back by the test" }}
{{- end }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  site: {{ .Values.site | default "" | quote }}
  broker: {{ .Values.broker | default "" | quote }}
  cluster: {{ .Values.cluster | quote }}
"""
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def edges(edge_tools: None,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Edge]]:
    with started_edges({name: tmp_path_factory.mktemp(f"edge-{name}")
                        for name in SITES}) as running:
        yield running


@pytest.fixture(scope="module")
def clusters(edges: dict[str, Edge], fplus: Fplus, chart: str,
             tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Both clusters (``fplus cluster get``), bootstrapped on their edges side by side once
    the chart is in the charts repo (an edge fetches that repo at its interval)."""
    scratch = tmp_path_factory.mktemp("cfg")
    with ThreadPoolExecutor(len(SITES)) as pool:
        done = {name: pool.submit(bootstrap, edges[name], fplus, name, scratch, "--label",
                                  f"site={name}", "--label", "fleet=cfg")
                for name in SITES}
    return {name: future.result() for name, future in done.items()}


@pytest.fixture(scope="module")
def chart(fplus: Fplus, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The ``cfg`` chart imported, with a chart template of it; the template's UUID."""
    root = tmp_path_factory.mktemp("chart") / CHART
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text(f"apiVersion: v2\nname: {CHART}\nversion: 1.0.0\n")
    (root / "templates" / "configmap.yaml").write_text(CFG_CHART)
    fplus("chart", "import", str(root), "--template", f"{CHART} 1.0.0")
    return str({t["name"]: t["uuid"] for t in fplus.json("chart", "list")}[f"{CHART} 1.0.0"])


@pytest.fixture(scope="module")
def manager(edge_stack: Stack) -> Api:
    return Api(edge_stack.manager.url, ("admin", ADMIN_PASSWORD))


def _ok(r: Any, *codes: int) -> dict[str, Any]:
    assert r.status_code in (codes or (200,)), (r.status_code, r.text)
    return dict(r.json())


def _deployments(manager: Api, cluster: str) -> dict[str, dict[str, Any]]:
    """``GET /v1/cluster/:c/deployment``, by deployment name."""
    listed = _ok(manager.get(f"/v1/cluster/{cluster}/deployment"))["deployments"]
    return {d["name"]: d for d in listed}


def _listed(manager: Api, cluster: str, name: str) -> dict[str, Any]:
    """Deployment ``name`` once the cluster's deployment list shows it."""
    return dict(wait_for(lambda: _deployments(manager, cluster).get(name), timeout=60,
                         what=f"deployment {name} on {cluster}"))


def _shown_when(fetch: Callable[[], dict[str, Any]], check: Callable[[dict[str, Any]], bool],
                what: str, timeout: float = 90) -> dict[str, Any]:
    """``fetch()`` once ``check`` accepts it (Edge Sync reads Flux's objects every 15 s, the
    Cluster Manager its report over notify); on timeout, the last one fetched."""
    last: dict[str, Any] = {}

    def shown() -> dict[str, Any] | None:
        nonlocal last
        last = fetch()
        return last if last and check(last) else None

    try:
        return dict(wait_for(shown, timeout=timeout, what=what))
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last shown: {last}") from None


def _listed_when(manager: Api, cluster: str, name: str,
                 check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Deployment ``name`` once the cluster's deployment list shows it as ``check`` wants."""
    return _shown_when(lambda: _deployments(manager, cluster).get(name) or {}, check,
                       f"deployment {name} on {cluster}")


def _get(edge: Edge, namespace: str, resource: str) -> dict[str, Any] | None:
    found = edge.plane.get("-n", namespace, resource)
    return dict(found) if found else None


def _settled(edge: Edge, namespace: str, release: str) -> dict[str, Any] | None:
    """The HelmRelease once helm-controller reports it Ready for its newest spec."""
    found = _get(edge, namespace, f"helmrelease/{release}")
    if (found and condition(found).get("status") == "True"
            and found["status"].get("observedGeneration") == found["metadata"]["generation"]):
        return found
    return None


def _wait_settled(edge: Edge, namespace: str, release: str) -> dict[str, Any]:
    """:func:`_settled`, waited for; on timeout, the HelmRelease's last status."""
    try:
        return dict(wait_for(lambda: _settled(edge, namespace, release), timeout=240,
                             what=f"{release} Ready"))
    except AssertionError as exc:
        last = _get(edge, namespace, f"helmrelease/{release}") or {}
        raise AssertionError(f"{exc}; its status: {last.get('status')}") from None


def _reconciled(edge: Edge, namespace: str, release: str) -> dict[str, Any]:
    """Ask helm-controller to reconcile the HelmRelease now (as ``flux reconcile`` does)
    and wait until it has handled that request; the HelmRelease then."""
    token = f"{time.time():.6f}"
    edge.plane.kubectl("-n", namespace, "annotate", "--overwrite", f"helmrelease/{release}",
                       f"reconcile.fluxcd.io/requestedAt={token}")
    return dict(wait_for(
        lambda: (hr := _get(edge, namespace, f"helmrelease/{release}")) and
        hr.get("status", {}).get("lastHandledReconcileAt") == token and hr,
        timeout=120, what=f"helm-controller to reconcile {release}"))


def _helm_releases(edge: Edge, namespace: str, release: str) -> list[str]:
    """The Helm release records (Secrets) of ``release``: none until it is installed."""
    found = edge.plane.get("-n", namespace, "secret", "-l", f"owner=helm,name={release}")
    return [s["metadata"]["name"] for s in (found or {}).get("items", [])]


def _edit_by_hand(edge: Edge, namespace: str, configmap: str, key: str, value: str,
                  scratch: Path) -> None:
    """``kubectl edit`` of a ConfigMap, its editor a script setting ``data.<key>``."""
    editor = scratch / "editor.py"
    editor.write_text(
        "import sys, yaml\n"
        "path = sys.argv[-1]\n"
        "obj = yaml.safe_load(open(path))\n"
        f"obj['data'][{key!r}] = {value!r}\n"
        "yaml.safe_dump(obj, open(path, 'w'))\n")
    env = {**os.environ, "KUBE_EDITOR": f"{sys.executable} {editor}"}
    done = subprocess.run(
        [str(edgetools.binary("kubectl")), "--kubeconfig", str(edge.kubeconfig), "-n",
         namespace, "edit", f"configmap/{configmap}", "-o", "yaml"],
        env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def test_values_from_each_clusters_labels_reach_its_edge(
        clusters: dict[str, dict[str, Any]], edges: dict[str, Edge], chart: str,
        manager: Api, fplus: Fplus, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"site": "{{cluster.labels.site}}",
                                      "broker": "mqtt.{{cluster.labels.site}}.factory:1883"}))
    fleet = fplus.json("fleet", "create", "sites", "--chart", chart, "-l", "fleet=cfg",
                       "--values", str(values))["uuid"]

    for name, cluster in clusters.items():
        want = {"site": name, "broker": f"mqtt.{name}.factory:1883"}
        uuid, namespace = cluster["uuid"], cluster["spec"]["namespace"]
        listed = _listed(manager, uuid, "sites")
        assert listed["values"] == want, listed
        release = f"{CHART}-{member_uuid(fleet, uuid)}"
        applied = wait_ready(edges[name], f"helmrelease/{release}", namespace, timeout=240)
        assert applied["spec"]["values"] == {**want, "cluster": name}, applied["spec"]
        installed = _get(edges[name], namespace, f"configmap/{release}")
        assert installed and installed["data"] == {**want, "cluster": name}, installed

    view = wait_for(lambda: (v := _ok(manager.get(f"/v1/fleet-deployment/{fleet}")))
                    ["ready"] == 2 and v, timeout=120, what="the roll-up to say ready")
    assert view["total"] == 2 and view["failed"] == 0, view


def test_a_deployment_is_installed_only_after_the_one_it_depends_on_is_ready(
        clusters: dict[str, dict[str, Any]], edges: dict[str, Edge], chart: str,
        manager: Api) -> None:
    edge, cluster = edges["leeds"], clusters["leeds"]
    uuid, namespace = cluster["uuid"], cluster["spec"]["namespace"]
    path = f"/v1/cluster/{uuid}/deployment"

    # broker is held back: helm-controller fails to render it
    broker = _ok(manager.post(path, json={"name": "broker", "chart": chart,
                                          "values": {"hold": True, "site": "broker"}}), 201)
    broker_hr = f"{CHART}-{broker['uuid']}"
    wait_for(lambda: condition(_get(edge, namespace, f"helmrelease/{broker_hr}"))
             .get("status") == "False", timeout=240, what="broker to fail while held")

    historian = _ok(manager.post(path, json={"name": "historian", "chart": chart,
                                             "values": {"site": "historian"},
                                             "dependsOn": ["broker"]}), 201)
    assert historian["dependsOn"] == ["broker"], historian
    historian_hr = f"{CHART}-{historian['uuid']}"
    applied = wait_for(lambda: _get(edge, namespace, f"helmrelease/{historian_hr}"),
                       timeout=120, what="Edge Sync to apply historian's HelmRelease")
    assert [d["name"] for d in applied["spec"]["dependsOn"]] == [broker_hr], applied["spec"]
    assert applied["spec"]["dependsOn"][0].get("namespace") in (None, namespace)

    # however often it is asked, helm-controller waits for broker and installs nothing
    for _ in range(2):
        waiting = _reconciled(edge, namespace, historian_hr)
        assert condition(waiting).get("reason") == "DependencyNotReady", waiting["status"]
        assert broker_hr in condition(waiting).get("message", ""), waiting["status"]
        assert _helm_releases(edge, namespace, historian_hr) == []
        assert _get(edge, namespace, f"configmap/{historian_hr}") is None
    shown = _listed_when(manager, uuid, "historian", lambda d: d["waitingOn"] == ["broker"])
    assert shown["state"] == "progressing", shown  # waiting, not failed

    # let go: broker is Ready first, then historian is installed
    _ok(manager.patch(f"{path}/{broker['uuid']}", json={"values": {"hold": None}},
                      headers=MERGE))
    ready = _wait_settled(edge, namespace, broker_hr)
    installed = _wait_settled(edge, namespace, historian_hr)
    assert _helm_releases(edge, namespace, historian_hr), "no Helm release for historian"
    broker_ready_at = condition(ready)["lastTransitionTime"]
    history = installed["status"]["history"]
    assert history[-1]["firstDeployed"] >= broker_ready_at, (history, broker_ready_at)
    configmap = _get(edge, namespace, f"configmap/{historian_hr}")
    assert configmap and configmap["metadata"]["creationTimestamp"] >= broker_ready_at
    done = _listed_when(manager, uuid, "historian", lambda d: d["state"] == "ready")
    assert done["waitingOn"] == [], done


def test_a_hand_edit_is_reported_with_warn_and_put_back_with_enabled(
        clusters: dict[str, dict[str, Any]], edges: dict[str, Edge], chart: str,
        manager: Api, tmp_path: Path) -> None:
    fleet = _ok(manager.post("/v1/fleet-deployment", json={
        "name": "panel", "chart": chart, "selector": {"matchLabels": {"fleet": "cfg"}},
        "values": {"site": "panel"}, "driftDetection": "warn"}), 201)["uuid"]
    where = {name: (c["spec"]["namespace"], f"{CHART}-{member_uuid(fleet, c['uuid'])}")
             for name, c in clusters.items()}
    for name, (namespace, release) in where.items():
        applied = _wait_settled(edges[name], namespace, release)
        assert applied["spec"]["driftDetection"]["mode"] == "warn", applied["spec"]
    edge, (namespace, release) = edges["york"], where["york"]
    york = clusters["york"]["uuid"]

    def rollup() -> dict[str, Any]:
        return _ok(manager.get(f"/v1/fleet-deployment/{fleet}"))

    assert rollup()["drifted"] == 0

    # edited by hand on york: helm-controller notices, reports and leaves it
    _edit_by_hand(edge, namespace, release, "site", "edited-by-hand", tmp_path)
    drifted = _reconciled(edge, namespace, release)
    assert condition(drifted, "Drifted").get("status") == "True", drifted["status"]
    edited = _get(edge, namespace, f"configmap/{release}")
    assert edited and edited["data"]["site"] == "edited-by-hand"
    view = _shown_when(rollup, lambda v: v["drifted"] == 1, "the roll-up to count york drifted")
    by_name = {c["name"]: c for c in view["clusters"]}
    assert by_name["york"].get("drifted") is True, by_name
    assert not by_name["leeds"].get("drifted"), by_name
    assert _deployments(manager, york)["panel"].get("drifted") is True

    # enabled: helm-controller puts it back, and the report clears
    _ok(manager.patch(f"/v1/fleet-deployment/{fleet}", json={"driftDetection": "enabled"},
                      headers=MERGE))
    wait_for(lambda: (_get(edge, namespace, f"helmrelease/{release}") or {})
             .get("spec", {}).get("driftDetection", {}).get("mode") == "enabled",
             timeout=120, what="Edge Sync to apply mode enabled")
    wait_for(lambda: (_get(edge, namespace, f"configmap/{release}") or {})
             .get("data", {}).get("site") == "panel", timeout=240,
             what="helm-controller to put the ConfigMap back")
    clean = _reconciled(edge, namespace, release)
    assert condition(clean, "Drifted").get("status") == "False", clean["status"]
    _shown_when(rollup, lambda v: v["drifted"] == 0, "the drift report to clear")
    assert not _deployments(manager, york)["panel"].get("drifted")
