"""What an operator used to other fleet managers looks for in the console. In Chromium: the
cluster list shows each cluster's labels and filters by a label selector (a bad one is named
next to the box); a cluster's page is in tabs with headings used once, its labels edited there
(previewed, then confirmed); the Rollouts page lists fleet and cluster rollouts with links to
each; the Audit page filters the log by cluster name. Over HTTP with a session: a label change
the grants refuse is shown and writes nothing, the Audit page asks Edge.Perm.Audit, a chart
template is picked by name when a cluster is requested, and the pages name a favicon."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.support.ui import WebDriverWait

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, create_cluster, status, wait_for
from tests.cluster_manager.api.test_deployments import make_chart
from tests.conftest import grant, make_user
from tests.console.conftest import console_session
from tests.console.test_browser import Page, _rows
from tests.console.test_rollout import _csrf

CONFIG = uuids.App.EdgeClusterConfiguration
PASSWORD = "ops-" + "p" * 12


@pytest.fixture(scope="module")
def root(stack: Stack) -> Api:
    return Api(stack.manager.url, ("admin", ADMIN_PASSWORD))


def _labels(stack: Stack, cluster: str) -> dict[str, str]:
    return dict(stack.admin.get(f"/v2/app/{CONFIG}/object/{cluster}").json().get("labels", {}))


def _list_rows(page: Page) -> list[str]:
    return [" ".join(row.text.split()) for row in page.all("#cluster-rows tr")]


def test_the_list_shows_labels_and_filters_by_selector(stack: Stack, browser: Any,
                                                      tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    for site in ("leeds", "york"):
        create_cluster(stack.admin, f"lab-{site}-{tag}", labels={"site": site, "batch": tag})
    page = Page(browser, stack.manager.url, tmp_path / "screenshots")
    page.sign_in("admin", ADMIN_PASSWORD)
    page.open(f"/ui/?q=lab-&selector=batch%3D{tag}")
    page.text_is("#cluster-rows", f"lab-york-{tag}")  # the rows follow the fleet live
    rows = _list_rows(page)
    assert [r.split()[:3] for r in rows] == [
        [f"lab-leeds-{tag}", f"batch={tag}", "site=leeds"],
        [f"lab-york-{tag}", f"batch={tag}", "site=york"]], rows
    page.fill({"selector": f"batch={tag},site in (york,hull)"})
    page.click("#filter")
    page.text_is("#shown", "1 shown of 1")
    assert _list_rows(page)[0].startswith(f"lab-york-{tag} ")
    page.fill({"selector": "site in york"})
    page.click("#filter")
    assert "selector" in page.find("#selector-error").text
    assert page.find("#selector").get_attribute("aria-invalid") == "true"
    assert "No clusters" in page.find("#cluster-rows").text


def test_the_cluster_page_is_in_tabs_and_edits_labels(stack: Stack, browser: Any,
                                                     tmp_path: Path) -> None:
    name = f"tabs-{uuid.uuid4().hex[:8]}"
    cluster = create_cluster(stack.admin, name, labels={"site": "leeds"})
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what=f"{name} ready")
    page = Page(browser, stack.manager.url, tmp_path / "screenshots")
    page.sign_in("admin", ADMIN_PASSWORD)
    page.open(f"/ui/cluster/{cluster}")
    tabs = [t.text for t in page.all("[role=tablist] [role=tab]")]
    assert tabs == ["Overview", "Deployments", "Secrets", "History"]
    headings = [h.get_attribute("textContent").strip() for h in page.all("h1, h2, h3")]
    assert len(headings) == len(set(headings)), headings
    assert page.find("#tab-deployments").get_attribute("hidden") is not None
    height = browser.execute_script("return document.documentElement.scrollHeight")
    assert height < 2000, height  # one tab at a time, not every section in one column
    page.click("#tablink-deployments")
    assert page.find("#tab-overview").get_attribute("hidden") is not None
    assert page.find("#cluster-deployments").is_displayed()
    page.click("#tablink-overview")

    assert page.find("#labels").text == "site=leeds"
    page.fill({"labels-text": "site=hull, tier=line"})
    page.click("#save-labels")
    page.text_is("#preview-moves-h", "It moves the cluster into or out of")
    assert _labels(stack, cluster) == {"site": "leeds"}  # not before Confirm
    page.click("#confirm-change")
    page.text_is(".notice", "Labels saved")
    assert _labels(stack, cluster) == {"site": "hull", "tier": "line"}
    assert page.find("#labels").text == "site=hull tier=line"
    page.fill({"labels-text": "site"})
    page.click("#save-labels")
    assert "'site' is not key=value" in page.find("#labels-error").text
    assert _labels(stack, cluster) == {"site": "hull", "tier": "line"}


def test_a_label_change_the_grants_refuse_is_shown_and_writes_nothing(
        stack: Stack, root: Api) -> None:
    """A user managing one cluster may not move it out of a fleet deployment's targets: that
    takes Edge.Perm.Clusters on every cluster (as PATCH /v1/cluster refuses it)."""
    tag = uuid.uuid4().hex[:8]
    cluster = create_cluster(stack.admin, f"grant-{tag}", labels={"fleet": tag})
    chart = make_chart(stack, f"Label chart {tag}")
    r = root.post("/v1/fleet-deployment", json={
        "name": f"by-label-{tag}", "chart": chart, "selector": {"matchLabels": {"fleet": tag}}})
    assert r.status_code == 201, r.text
    uid, _ = make_user(stack.admin, f"one-cluster-{tag}", password=PASSWORD)
    grant(stack.admin, uid, uuids.EdgePerm.Clusters, cluster)
    session, page = console_session(stack, f"one-cluster-{tag}", PASSWORD)
    r = session.post(f"{stack.manager.url}/ui/cluster/{cluster}/labels",
                     data={"csrf": _csrf(page), "labels": "fleet=elsewhere"},
                     allow_redirects=False)
    assert r.status_code == 403, r.text[:300]
    assert 'id="labels-error"' in r.text and "every cluster" in r.text
    assert _labels(stack, cluster) == {"fleet": tag}


def test_the_rollouts_page_lists_fleet_and_cluster_rollouts(
        stack: Stack, root: Api, browser: Any, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    cluster = create_cluster(stack.admin, f"ro-list-{tag}")
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what="ready")
    chart = make_chart(stack, f"Rollout list {tag}")
    r = root.post("/v1/fleet-deployment", json={
        "name": f"paced-{tag}", "chart": chart, "clusters": [cluster],
        "rollout": {"steps": [{"clusters": 1}]}})
    assert r.status_code == 201, r.text
    fleet = r.json()["uuid"]
    template = uuids.App.FluxTemplate
    default = stack.admin.get(f"/v2/app/{template}/object/{template}").json()
    r = root.post("/v1/rollout", json={"name": f"tpl-{tag}", "change": {"fluxTemplate": default},
                                       "clusters": [cluster]})
    assert r.status_code == 201, r.text
    cluster_rollout = r.json()["uuid"]

    page = Page(browser, stack.manager.url, tmp_path / "screenshots")
    page.sign_in("admin", ADMIN_PASSWORD)
    page.click("#nav-rollouts")
    rows = {r.split()[0]: r for r in _rows(page, "#rollouts")}
    assert rows[f"paced-{tag}"].startswith(f"paced-{tag} fleet deployment"), rows
    assert rows[f"tpl-{tag}"].startswith(f"tpl-{tag} cluster rollout"), rows
    page.click(f"#rollouts a[href$='/ui/rollout/{cluster_rollout}']")
    page.text_is("h1", f"Rollout of tpl-{tag}")
    page.click("#all-rollouts")
    page.click(f"#rollouts a[href$='/ui/rollout/{fleet}']")
    page.text_is("h1", f"Rollout of paced-{tag}")


def test_the_audit_page_filters_the_log_under_its_permission(
        stack: Stack, browser: Any, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    name = f"audited-{tag}"
    api = Api(stack.manager.url, stack.admin.auth)
    r = api.post("/v1/cluster", json={"name": name, "namespace": "fplus-edge"})
    assert r.status_code == 201, r.text
    cluster = r.json()["uuid"]
    page = Page(browser, stack.manager.url, tmp_path / "screenshots")
    page.sign_in("admin", ADMIN_PASSWORD)
    page.click("#nav-audit")
    page.fill({"audit-cluster": name})
    page.click("#audit-filter")
    WebDriverWait(browser, 30).until(lambda _: "cluster=" in browser.current_url)
    rows = _rows(page, "#audit")
    assert rows and all(name in row for row in rows), rows
    assert any("cluster.create" in row for row in rows), rows
    page.fill({"audit-since": "yesterday"})
    page.click("#audit-filter")
    assert "ISO 8601" in page.find("#audit-since-error").text

    uid, _ = make_user(stack.admin, f"no-audit-{tag}", password=PASSWORD)
    grant(stack.admin, uid, uuids.EdgePerm.Clusters, cluster)
    session, _ = console_session(stack, f"no-audit-{tag}", PASSWORD)
    r = session.get(f"{stack.manager.url}/ui/audit", params={"cluster": cluster})
    assert r.status_code == 403 and "Not allowed" in r.text


def test_a_chart_template_is_picked_by_name_and_the_pages_name_a_favicon(
        stack: Stack) -> None:
    tag = uuid.uuid4().hex[:8]
    chart = make_chart(stack, f"Named chart {tag}")
    session, _ = console_session(stack)
    form = session.get(f"{stack.manager.url}/ui/new").text
    assert "UUID, optional" not in form
    assert f'<option value="Named chart {tag}">' in form
    r = session.post(f"{stack.manager.url}/ui/new", data={
        "csrf": _csrf(form), "name": f"by-chart-{tag}", "namespace": "fplus-edge",
        "chart": f"Named chart {tag}"}, allow_redirects=False)
    assert r.status_code == 303, r.text[:500]
    cluster = r.headers["Location"].split("/cluster/", 1)[1].split("?", 1)[0]
    assert stack.admin.get(f"/v2/app/{CONFIG}/object/{cluster}").json()["chart"] == chart
    r = session.post(f"{stack.manager.url}/ui/new", data={
        "csrf": _csrf(form), "name": f"no-chart-{tag}", "namespace": "fplus-edge",
        "chart": "No such chart"})
    assert r.status_code == 422 and "no Helm chart template is named" in r.text

    icon = form.split('rel="icon" href="', 1)[1].split('"', 1)[0]
    r = session.get(f"{stack.manager.url}{icon}")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("image/svg+xml")
