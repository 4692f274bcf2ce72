"""Safe fleet changes on real edges: three clusters, each bootstrapped onto an edge of its own
(real helm-controller and kustomize-controller), started side by side.

A fleet deployment of chart ``app`` 1.0.0 is Ready everywhere; its change to 2.0.0, whose
template fails on the one cluster an override marks, is paced with that cluster alone in the
canary step and ``maxFailures: 0``: the rollout halts naming it, and the clusters of the
later step never hold 2.0.0 (not in their Edge deployment entries, sampled all along, nor in
their HelmReleases, whose spec never changes). ``fplus rollout rollback`` brings the canary's
HelmRelease back to Ready at 1.0.0, as helm-controller reports it; the same change again (a
new revision) with ``onFailure: rollback`` rolls back by itself.

A Flux version rollout with ``offline: skip`` to two edges, one of whose Edge Sync is down
past the stale threshold, completes on the other and lists the offline one as skipped; when
its Edge Sync reports again it is given the version and kustomize-controller rolls its Flux
to the new images.

Both versions of ``app`` are in the charts repo at once under two chart names, ``app-v1``
and ``app-v2`` (the repo holds one version per name, and a HelmRelease names no version: a
new import of one name reaches every cluster at once, unpaced). Their chart templates share
the prefix ``app``, so a cluster's HelmRelease keeps its name and only its chart changes
(helm-controller replaces a release whose chart name changed: uninstall, then install).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from fplus.cluster_manager.rollouts.fleet_entry import member_uuid
from fplus.config_store import uuids
from harness.realedge import Edge, started_edges
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, wait_for
from tests.edge.conftest import (
    Fplus,
    bootstrap,
    condition,
    flux_export,
    import_central,
    wait_applied,
)
from tests.edge.test_flux_upgrade import _images, _running, _version

STALE = 6
"""``--edge-stale-after`` (seconds): above the edges' heartbeat interval, :data:`HEARTBEAT`."""
HEARTBEAT = "1"
CLUSTERS = {"canary": "canary", "line-a": "main", "line-b": "main"}
"""Cluster name → its ``ring`` label; the canary step is ``ring=canary``."""
FLEET = "app"
MERGE = {"Content-Type": "application/merge-patch+json"}
APP_CHART = """{{- if and .Values.refuse (hasPrefix "2." .Chart.Version) }}
{{- fail "app 2.0.0 refuses a cluster marked refuse" }}
{{- end }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  version: {{ .Chart.Version | quote }}
  attempt: {{ .Values.attempt | quote }}
"""


@pytest.fixture(scope="module")
def manager_args() -> tuple[str, ...]:
    return ("--edge-stale-after", str(STALE))


@pytest.fixture(scope="module")
def edges(edge_tools: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Edge]]:
    """An edge per cluster name, started side by side; Edge Sync heartbeats every
    :data:`HEARTBEAT` seconds."""
    env = {"edge-sync": {"HEARTBEAT_INTERVAL": HEARTBEAT}}
    with started_edges({name: tmp_path_factory.mktemp(f"edge-{name}") for name in CLUSTERS},
                       env) as started:
        yield started


def _app_chart(root: Path, major: int) -> Path:
    chart = root / f"app-v{major}"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: app-v{major}\n"
                                      f"version: {major}.0.0\n")
    (chart / "templates" / "configmap.yaml").write_text(APP_CHART)
    return chart


@pytest.fixture(scope="module")
def clusters(edges: dict[str, Edge], edge_stack: Stack, fplus: Fplus,
             tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The three clusters (``fplus cluster get``), each bootstrapped on its edge; chart
    templates ``app 1.0.0`` and ``app 2.0.0`` (prefix ``app``) and Flux ``flux-next``
    imported first."""
    scratch = tmp_path_factory.mktemp("safe")
    for major in (1, 2):
        fplus("chart", "import", str(_app_chart(scratch, major)), "--template",
              f"app {major}.0.0")
    for template in fplus.json("chart", "list"):
        if str(template.get("name")).startswith("app "):
            r = edge_stack.admin.patch(f"/v2/app/{uuids.App.HelmChartTemplate}/object/"
                                       f"{template['uuid']}", json={"prefix": "app"},
                                       headers=MERGE)
            assert r.status_code == 204, r.text
    import_central(edge_stack, "import-flux", flux_export(scratch, of="flux-next"))
    with ThreadPoolExecutor(len(CLUSTERS)) as pool:
        done = {name: pool.submit(bootstrap, edges[name], fplus, name, scratch, "--label",
                                  f"ring={ring}", "--label", "fleet=safe")
                for name, ring in CLUSTERS.items()}
    return {name: future.result() for name, future in done.items()}


def _semver(version: object) -> str:
    """``1.0.0+98671c529cc4`` → ``1.0.0``."""
    return str(version).split("+", 1)[0]


class Releases:
    """The fleet deployment's HelmRelease on each edge, read with the Kubernetes client."""

    def __init__(self, edges: dict[str, Edge], clusters: dict[str, dict[str, Any]],
                 fleet: str) -> None:
        self.api = {name: kubernetes.client.CustomObjectsApi(
            kubernetes.config.new_client_from_config(config_file=str(edge.kubeconfig)))
            for name, edge in edges.items()}
        self.where = {name: (c["spec"]["namespace"], f"app-{member_uuid(fleet, c['uuid'])}")
                      for name, c in clusters.items()}

    def get(self, name: str) -> dict[str, Any] | None:
        namespace, release = self.where[name]
        try:
            found = self.api[name].get_namespaced_custom_object(
                "helm.toolkit.fluxcd.io", "v2", namespace, "helmreleases", release)
        except kubernetes.client.ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return dict(found)  # type: ignore[call-overload]  # the client types it object

    def ready_at(self, name: str, version: str) -> dict[str, Any] | None:
        """The HelmRelease once helm-controller reports it Ready, for its current spec, with
        ``version`` the chart version last attempted and deployed; else None. (Charts come
        from Git: helm-controller's versions carry the commit, ``1.0.0+<sha>``.)"""
        found = self.get(name)
        status = (found or {}).get("status") or {}
        history = status.get("history") or [{}]
        if (found and condition(found).get("status") == "True"
                and status.get("observedGeneration") == found["metadata"]["generation"]
                and _semver(status.get("lastAttemptedRevision")) == version
                and _semver(history[0].get("chartVersion")) == version
                and history[0].get("status") == "deployed"):
            return found
        return None

    def wait_ready_at(self, name: str, version: str) -> dict[str, Any]:
        """:meth:`ready_at`, waited for; on timeout, the last HelmRelease status."""
        try:
            return dict(wait_for(lambda: self.ready_at(name, version), timeout=240,
                                 what=f"{name}'s HelmRelease Ready at {version}"))
        except AssertionError as exc:
            raise AssertionError(f"{exc}; its status: {(self.get(name) or {}).get('status')}"
                                 ) from None


class Sampler(threading.Thread):
    """Records, every half second until stopped, the chart templates the fleet deployment's
    Edge deployment entries hold and the charts its HelmReleases name, by cluster name."""

    def __init__(self, stack: Stack, releases: Releases, clusters: dict[str, dict[str, Any]],
                 fleet: str) -> None:
        super().__init__(name="sampler", daemon=True)
        self.stack, self.releases, self.fleet = stack, releases, fleet
        self.members = {name: member_uuid(fleet, c["uuid"]) for name, c in clusters.items()}
        self.entries: dict[str, set[str]] = {name: set() for name in clusters}
        self.charts: dict[str, set[str]] = {name: set() for name in clusters}
        self.errors: list[str] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.5):
            for name, member in self.members.items():
                try:
                    r = self.stack.admin.get(
                        f"/v2/app/{uuids.App.EdgeDeployment}/object/{member}")
                    if r.status_code == 200:
                        self.entries[name].add(r.json().get("chart"))
                    release = self.releases.get(name)
                    if release:
                        self.charts[name].add(release["spec"]["chart"]["spec"]["chart"])
                except Exception as exc:  # noted; the test fails on it
                    self.errors.append(repr(exc))

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.join(timeout=30)


def _rollout_when(manager: Api, rollout: str, what: str, check: Callable[[dict[str, Any]], bool],
                  timeout: float = 300) -> dict[str, Any]:
    last: dict[str, Any] = {}

    def look() -> dict[str, Any] | None:
        nonlocal last
        r = manager.get(f"/v1/rollout/{rollout}")
        assert r.status_code == 200, r.text
        last = r.json()
        return last if check(last) else None

    try:
        return wait_for(look, timeout=timeout, what=what)
    except AssertionError:
        raise AssertionError(f"timed out waiting for {what}; the rollout: {last}") from None


def _state(*states: str) -> Callable[[dict[str, Any]], bool]:
    return lambda view: view.get("state") in states


def test_a_chart_failing_on_the_canary_halts_and_rolls_back(
        clusters: dict[str, dict[str, Any]], edges: dict[str, Edge], edge_stack: Stack,
        fplus: Fplus, tmp_path: Path) -> None:
    manager = Api(edge_stack.manager.url, ("admin", ADMIN_PASSWORD))
    templates = {t["name"]: t["uuid"] for t in fplus.json("chart", "list")}
    one, two = templates["app 1.0.0"], templates["app 2.0.0"]
    ids = {name: c["uuid"] for name, c in clusters.items()}
    later = [name for name, ring in CLUSTERS.items() if ring != "canary"]
    paced = {"steps": [{"clusters": {"matchLabels": {"ring": "canary"}}}], "maxFailures": 0,
             "onFailure": "halt"}
    for name, body in (("values", {"attempt": 1}), ("refuse", {"refuse": True}),
                       ("rollout", paced)):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(body))
    fleet = fplus.json("fleet", "create", FLEET, "--chart", one, "-l", "fleet=safe",
                       "--values", str(tmp_path / "values.yaml"),
                       "--override", f"canary={tmp_path / 'refuse.yaml'}",
                       "--rollout", str(tmp_path / "rollout.yaml"))["uuid"]
    releases = Releases(edges, clusters, fleet)

    # 1.0.0 everywhere (created through the same canary step), Ready as helm-controller says
    _rollout_when(manager, fleet, "the first rollout to complete", _state("Complete"))
    ready = {name: releases.wait_ready_at(name, "1.0.0") for name in CLUSTERS}

    with Sampler(edge_stack, releases, clusters, fleet) as sampler:
        # 2.0.0 halts at the canary, which it fails on
        r = manager.patch(f"/v1/fleet-deployment/{fleet}", json={"chart": two}, headers=MERGE)
        assert r.status_code == 200, r.text
        halted = _rollout_when(manager, fleet, "the rollout to halt", _state("Halted"))
        canary = releases.get("canary")
        why = (f"the rollout: {halted}; the canary's HelmRelease now: "
               f"{(canary or {}).get('status')}")
        assert [f["cluster"] for f in halted["failed"]] == [ids["canary"]], why
        assert "refuses" in halted["failed"][0]["message"], (
            f"the canary's failure is not the chart's own: {halted['failed'][0]['message']!r}; "
            f"{why}")
        assert halted["updated"] == [ids["canary"]], why
        assert canary and canary["spec"]["chart"]["spec"]["chart"] == "app-v2", why
        assert condition(canary).get("status") == "False", why

        # rolled back by hand: the canary is Ready at 1.0.0 again
        fplus("rollout", "rollback", FLEET)
        back = _rollout_when(manager, fleet, "RolledBack", _state("RolledBack"))
        assert back["rolledBack"] == [ids["canary"]] and back.get("reason"), back
        releases.wait_ready_at("canary", "1.0.0")

        # the same change again, a new revision, rolls itself back
        rollback = {**paced, "onFailure": "rollback"}
        r = manager.patch(f"/v1/fleet-deployment/{fleet}", headers=MERGE, json={
            "chart": two, "values": {"attempt": 2}, "rollout": rollback})
        assert r.status_code == 200, r.text
        again = _rollout_when(manager, fleet, "RolledBack by itself",
                              lambda v: v["revision"] != back["revision"]
                              and v["state"] == "RolledBack")
        assert [f["cluster"] for f in again["failed"]] == [ids["canary"]], again
        assert again["rolledBack"] == [ids["canary"]] and again.get("reason"), again
        restored = releases.wait_ready_at("canary", "1.0.0")
        assert restored["spec"]["chart"]["spec"]["chart"] == "app-v1"
        assert restored["spec"]["values"]["attempt"] == 1

    # the later step never held 2.0.0: not in its entries, nor in its HelmReleases
    assert not sampler.errors, sampler.errors[-3:]
    assert sampler.entries["canary"] >= {one, two}, sampler.entries
    for name in later:
        assert sampler.entries[name] == {one}, (name, sampler.entries)
        assert sampler.charts[name] == {"app-v1"}, (name, sampler.charts)
        release = releases.ready_at(name, "1.0.0")
        generation = ready[name]["metadata"]["generation"]
        assert release and release["metadata"]["generation"] == generation, release


def test_a_flux_rollout_skips_an_offline_edge_and_gives_it_the_version_when_it_reports(
        clusters: dict[str, dict[str, Any]], edges: dict[str, Edge], edge_stack: Stack,
        fplus: Fplus, tmp_path: Path) -> None:
    manager = Api(edge_stack.manager.url, ("admin", ADMIN_PASSWORD))
    installed, newer = flux_export(tmp_path), flux_export(tmp_path, of="flux-next")
    online, offline = "line-a", "line-b"  # the ring=main clusters
    ids = {name: clusters[name]["uuid"] for name in (online, offline)}

    def status(name: str) -> dict[str, Any]:
        r = manager.get(f"/v1/cluster/{ids[name]}/status")
        assert r.status_code == 200, r.text
        return dict(r.json())

    before = {name: status(name) for name in ids}

    def given(name: str) -> None:
        """Wait for the commit giving ``name`` the version, then for its edge to apply it
        (its Flux asked to fetch now, as ``flux reconcile`` does, not at its interval)."""
        wait_for(lambda: (now := status(name))["spec"].get("fluxVersion") == _version(newer)
                 and now["repoCommit"] != before[name]["repoCommit"], timeout=120,
                 what=f"{name} to be given the version")
        wait_applied(edges[name], fplus, name)

    assert all(_running(edges[name]) == _images(installed) for name in ids)

    # line-b's Edge Sync stops: its last report ages past the stale threshold
    edges[offline].kubelet.hold("edge-sync")
    wait_for(lambda: status(offline)["phase"] in ("Stale", "Offline"), timeout=STALE * 10,
             what=f"{offline} to go stale")
    assert status(online)["phase"] == "Online"

    rollout = fplus.json("rollout", "create", "flux-next", "--flux-version", _version(newer),
                         "-l", "ring=main", "--offline", "skip")["uuid"]
    given(online)
    done = _rollout_when(manager, rollout, "the rollout to complete", _state("Complete"))
    assert [(s["cluster"], "given" in s) for s in done["skipped"]] == [(ids[offline], False)]
    assert done["failed"] == [] and done["updated"] == [ids[online]], done
    wait_for(lambda: _running(edges[online]) == _images(newer), timeout=240,
             what=f"{online}'s Flux on the new images")
    left = status(offline)
    assert left["spec"].get("fluxVersion") == before[offline]["spec"].get("fluxVersion")
    assert left["repoCommit"] == before[offline]["repoCommit"]
    assert _running(edges[offline]) == _images(installed)

    # it reports again: given the version, its Flux rolls to the new images
    edges[offline].kubelet.release("edge-sync")
    given(offline)
    wait_for(lambda: _running(edges[offline]) == _images(newer), timeout=300,
             what=f"{offline}'s Flux on the new images")
    view = _rollout_when(manager, rollout, "the status to say so",
                         lambda v: ids[offline] in v["updated"], timeout=60)
    assert view["state"] == "Complete" and view["failed"] == [], view
    assert [(s["cluster"], "given" in s) for s in view["skipped"]] == [(ids[offline], True)]
