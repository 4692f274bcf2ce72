"""The console previews a change that reaches clusters' repos before making it, on the real
services over HTTP with a session: a new cluster, a new fleet deployment and a label change
that moves a cluster into a fleet deployment each answer the dry run's preview (the cluster
by name, what changes there, the diff) with a Confirm form and write nothing; Confirm,
posting the values it carries, makes the change. A refused change shows the refusal and no
Confirm, and writes nothing; a preview is not audited."""

from __future__ import annotations

import html
import re
import uuid

import pytest
import requests

from fplus.cluster_manager.rollouts.fleet_entry import member_uuid
from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.api.test_deployments import make_chart
from tests.console.conftest import cluster_names, console_session
from tests.console.test_rollout import _csrf

CONFIG = uuids.App.EdgeClusterConfiguration
DEPLOYMENT = uuids.App.EdgeDeployment


@pytest.fixture(scope="module")
def root(stack: Stack) -> Api:
    return Api(stack.manager.url, ("admin", ADMIN_PASSWORD))


@pytest.fixture(scope="module")
def chart(stack: Stack) -> str:
    return make_chart(stack, f"Preview broker {uuid.uuid4().hex[:6]}")


def _confirm(page: str) -> tuple[str, dict[str, str]]:
    """The Confirm form's action and the values it carries."""
    found = re.search(r'<form method="post" action="([^"]+)" id="confirm-form".*?</form>',
                      page, re.S)
    assert found, "no Confirm form on the page"
    fields = re.findall(r'<input type="hidden" name="([\w-]+)" value="([^"]*)">', found[0])
    return html.unescape(found[1]), {k: html.unescape(v) for k, v in fields}


def _post(session: requests.Session, stack: Stack, path: str,
          data: dict[str, str]) -> requests.Response:
    return session.post(f"{stack.manager.url}{path}", data=data, allow_redirects=False)


def _audited(root: Api, action: str, name: str) -> bool:
    rows = root.get("/v1/audit", params={"limit": "100"}).json()["entries"]
    return any(r["action"] == action and r["target"]["name"] == name for r in rows)


def test_a_new_cluster_is_previewed_then_created_on_confirm(stack: Stack, root: Api) -> None:
    session, page = console_session(stack)
    name = f"pv-new-{uuid.uuid4().hex[:8]}"
    form = {"csrf": _csrf(page), "name": name, "namespace": "fplus-edge",
            "values": "greeting: hello\nreplicas: 2\n"}
    r = _post(session, stack, "/ui/new?dryRun=true", form)
    assert r.status_code == 200, r.text[:500]
    assert 'id="preview-summary"' in r.text and 'id="preview-refused"' not in r.text
    preview = r.text[r.text.index('id="preview"'):r.text.index('id="confirm-form"')]
    assert f'<h3 id="preview-c1">{name}</h3>' in preview, preview[:1000]
    assert "Files added" in preview and '<pre class="diff"' in preview
    assert name not in cluster_names(stack)  # nothing written
    assert not _audited(root, "cluster.create", name)  # a preview is no change

    action, carried = _confirm(r.text)
    assert action == "/ui/new" and carried == form
    r = _post(session, stack, action, carried)
    assert r.status_code == 303 and r.headers["Location"].endswith("?done=created"), r.text
    cluster = r.headers["Location"].split("/cluster/", 1)[1].split("?", 1)[0]
    entry = stack.admin.get(f"/v2/app/{CONFIG}/object/{cluster}").json()
    assert entry["name"] == name and entry["values"] == {"greeting": "hello", "replicas": 2}
    assert _audited(root, "cluster.create", name)


def test_a_refused_new_cluster_shows_the_refusal_and_no_confirm(stack: Stack) -> None:
    session, page = console_session(stack)
    name = f"pv-bad-{uuid.uuid4().hex[:8]}"
    r = _post(session, stack, "/ui/new?dryRun=true", {
        "csrf": _csrf(page), "name": name, "namespace": "fplus-edge",
        "flux_version": "v9.9.9"})
    assert r.status_code == 422, r.text[:500]
    refused = re.search(r'id="preview-refusals">(.*?)</ul>', r.text, re.S)
    assert refused and "fluxVersion" in refused[1] and "v9.9.9" in refused[1], r.text[:3000]
    assert 'id="confirm-change"' not in r.text and name not in cluster_names(stack)


def test_a_fleet_deployment_is_previewed_per_cluster_then_created(
        stack: Stack, root: Api, chart: str) -> None:
    site = f"pv{uuid.uuid4().hex[:8]}"
    clusters = {create_cluster(stack.admin, f"{site}-{n}", labels={"pv-site": site}): n
                for n in range(2)}
    session, _ = console_session(stack)
    page = session.get(f"{stack.manager.url}/ui/fleet").text
    name = f"pv-fleet-{site}"
    form = {"csrf": _csrf(page), "name": name, "chart": chart, "selector": f"pv-site={site}",
            "values": "replicas: 3"}
    r = _post(session, stack, "/ui/fleet?dryRun", form)
    assert r.status_code == 200, r.text[:500]
    assert "This change reaches 2 clusters" in r.text
    for cluster in clusters:
        assert f'<a href="/ui/cluster/{cluster}">' in r.text  # each cluster, by name
    assert r.text.count("Deployments added") == 2 and "replicas: 3" in r.text
    assert name not in [f["name"] for f in root.get("/v1/fleet-deployment").json()[
        "fleetDeployments"]]

    action, carried = _confirm(r.text)
    assert action == "/ui/fleet" and carried == form
    r = _post(session, stack, action, carried)
    assert r.status_code == 303, r.text[:500]
    fleet = r.headers["Location"].rsplit("/", 1)[-1]
    assert root.get(f"/v1/fleet-deployment/{fleet}").json()["spec"]["values"] == {
        "replicas": 3}
    wait_for(lambda: all(stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/"
                                         f"{member_uuid(fleet, c)}").status_code == 200
                         for c in clusters), timeout=60, what="the leader's deployments")


def test_a_fleet_deployment_refused_on_its_clusters_has_no_confirm(
        stack: Stack, root: Api) -> None:
    site = f"pr{uuid.uuid4().hex[:8]}"
    cluster = create_cluster(stack.admin, f"{site}-0", labels={"pv-site": site})
    missing = make_chart(stack, f"Missing chart {site}", chart=f"not-imported-{site}")
    session, _ = console_session(stack)
    page = session.get(f"{stack.manager.url}/ui/fleet").text
    name = f"pv-refused-{site}"
    r = _post(session, stack, "/ui/fleet?dryRun", {
        "csrf": _csrf(page), "name": name, "chart": missing, "selector": f"pv-site={site}"})
    assert r.status_code == 422, r.text[:500]
    refused = re.search(r'id="preview-refusals">(.*?)</ul>', r.text, re.S)
    assert refused and f'<a href="/ui/cluster/{cluster}">' in refused[1], r.text[:3000]
    assert f"not-imported-{site}" in refused[1] and "is not in the shared charts repo" in \
        refused[1]
    assert 'id="confirm-change"' not in r.text
    assert name not in [f["name"] for f in root.get("/v1/fleet-deployment").json()[
        "fleetDeployments"]]


def test_a_label_change_names_the_fleet_deployment_it_moves_into_before_confirm(
        stack: Stack, root: Api, chart: str) -> None:
    tag = uuid.uuid4().hex[:8]
    cluster = create_cluster(stack.admin, f"pv-lab-{tag}", labels={"site": "leeds"})
    r = root.post("/v1/fleet-deployment", json={
        "name": f"pv-by-label-{tag}", "chart": chart,
        "selector": {"matchLabels": {"pv-batch": tag}}})
    assert r.status_code == 201, r.text
    fleet = r.json()["uuid"]
    session, page = console_session(stack)
    form = {"csrf": _csrf(page), "labels": f"site=leeds, pv-batch={tag}"}
    r = _post(session, stack, f"/ui/cluster/{cluster}/labels?dryRun=true", form)
    assert r.status_code == 200, r.text[:500]
    moves = re.search(r'id="preview-moves"[^>]*>(.*?)</ul>', r.text, re.S)
    assert moves and f"fleet deployment &#39;pv-by-label-{tag}&#39; ({fleet})" in moves[1], \
        r.text[:3000]
    labels = stack.admin.get(f"/v2/app/{CONFIG}/object/{cluster}").json()["labels"]
    assert labels == {"site": "leeds"}  # nothing written

    action, carried = _confirm(r.text)
    assert action == f"/ui/cluster/{cluster}/labels" and carried == form
    r = _post(session, stack, action, carried)
    assert r.status_code == 303 and r.headers["Location"].endswith("?done=labelled")
    labels = stack.admin.get(f"/v2/app/{CONFIG}/object/{cluster}").json()["labels"]
    assert labels == {"site": "leeds", "pv-batch": tag}

    r = _post(session, stack, f"/ui/cluster/{cluster}/labels?dryRun=true",
              {"csrf": form["csrf"], "labels": f"site=york, pv-batch={tag}"})
    assert r.status_code == 200 and "into or out of no fleet deployment" in r.text
