"""Edge deployments and fleet deployments in the console. In Chromium: deploy a chart on a
cluster that reported two hosts, see it listed with its host, move it, delete it (the chart
picker never offers the system chart); the fleet pages show a fleet deployment's roll-up from
the edges' reports. Over HTTP with a session: refused deploys and moves name the field and
write nothing; a fleet's deployment is read-only; a read-only user gets no forms."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.support.ui import Select

from fplus.cluster_manager.rollouts.fleet_entry import member_uuid
from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.api.conftest import report_edge
from tests.cluster_manager.api.test_deployments import HOSTS, deployments_of, make_chart
from tests.console.conftest import READER_PASSWORD, Reader, console_session
from tests.console.test_browser import Page, _rows

DEPLOYMENT = uuids.App.EdgeDeployment
SYSTEM_CHART = uuids.Shared.EdgeClusterChart


@pytest.fixture(scope="module")
def chart(stack: Stack) -> str:
    return make_chart(stack, "Console broker")


@pytest.fixture
def cluster(stack: Stack) -> str:
    """A configured cluster whose Edge Sync reported two hosts, edge-1 and edge-2."""
    found = create_cluster(stack.admin, f"ui-dep-{uuid.uuid4().hex[:8]}")
    report_edge(stack, found, hosts=HOSTS)
    return found


def _entry(stack: Stack, deployment: str) -> dict[str, Any] | None:
    r = stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{deployment}")
    return r.json() if r.status_code == 200 else None


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found, "no CSRF field on the page"
    return found.group(1)


def test_deploy_move_and_delete_in_the_browser(stack: Stack, chart: str, cluster: str,
                                               browser: Any, tmp_path: Path) -> None:
    page = Page(browser, stack.manager.url, tmp_path / "screenshots")
    page.sign_in("admin", ADMIN_PASSWORD)
    page.open(f"/ui/cluster/{cluster}#tab-deployments")
    assert "No deployments." in page.find("#cluster-deployments").text
    offered = [o.get_attribute("value") for o in page.all("#deploy-chart option")]
    assert chart in offered and SYSTEM_CHART not in offered
    hosts = [o.text for o in page.all("#deploy-hostname option")]
    assert hosts == ["Floating", "edge-1", "edge-2"]

    page.fill({"deploy-name": "broker", "deploy-values": "replicas: 2"})
    Select(page.find("#deploy-chart")).select_by_value(chart)
    Select(page.find("#deploy-hostname")).select_by_visible_text("edge-2")
    page.click("#deploy")
    page.text_is(".notice", "Deployment written")
    [made] = deployments_of(stack, cluster)
    assert _entry(stack, made) == {"name": "broker", "cluster": cluster, "chart": chart,
                                   "hostname": "edge-2", "values": {"replicas": 2},
                                   "createdAt": (_entry(stack, made) or {}).get("createdAt")}
    [row] = _rows(page, "#cluster-deployments")
    assert row.startswith("broker Console broker edge-2 unknown the edge has not reported")
    page.shot("01-deployed")

    Select(page.find(f"#move-{made}")).select_by_visible_text("edge-1")
    page.click(f"tr[data-uuid='{made}'] button.move")
    page.text_is(".notice", "Deployment moved")
    assert (_entry(stack, made) or {}).get("hostname") == "edge-1"
    assert _rows(page, "#cluster-deployments")[0].startswith("broker Console broker edge-1 ")
    Select(page.find(f"#move-{made}")).select_by_visible_text("Floating")
    page.click(f"tr[data-uuid='{made}'] button.move")
    page.text_is(".notice", "Deployment moved")
    assert "hostname" not in (_entry(stack, made) or {})
    assert _rows(page, "#cluster-deployments")[0].startswith("broker Console broker floating ")
    page.shot("02-moved")

    page.click(f"tr[data-uuid='{made}'] button.undeploy")
    page.text_is(".notice", "Deployment deleted")
    assert deployments_of(stack, cluster) == [] and _entry(stack, made) is None
    assert "No deployments." in page.find("#cluster-deployments").text


def test_the_fleet_pages_show_the_roll_up(stack: Stack, chart: str, browser: Any,
                                          tmp_path: Path) -> None:
    made = [f"ui-fleet-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    one, two = (create_cluster(stack.admin, n) for n in made)
    root = Api(stack.manager.url, ("admin", ADMIN_PASSWORD))
    name = f"fleet-{uuid.uuid4().hex[:8]}"
    r = root.post("/v1/fleet-deployment", json={"name": name, "chart": chart,
                                                "clusters": [one, two]})
    assert r.status_code == 201, r.text
    fleet = r.json()["uuid"]
    wait_for(lambda: all(_entry(stack, member_uuid(fleet, c)) for c in (one, two)),
             what="the fleet's deployments written")
    ready = member_uuid(fleet, one)
    report_edge(stack, one, deployments={"releases": [f"{chart}-{ready}"]},
                flux={"objects": [{"kind": "HelmRelease", "namespace": "fplus-edge",
                                   "name": f"{chart}-{ready}", "ready": "True"}],
                      "total": 1, "ready": 1, "failed": 0, "progressing": 0})
    report_edge(stack, two, deployments={"releases": [], "failed": [
        {"uuid": member_uuid(fleet, two), "name": name, "error": "values do not fit"}]})

    page = Page(browser, stack.manager.url, tmp_path / "screenshots")
    page.sign_in("admin", ADMIN_PASSWORD)
    page.click("#nav-fleets")
    page.find("#fleets")
    [row] = [r for r in _rows(page, "#fleets") if r.startswith(name + " ")]
    assert row == (f"{name} Console broker clusters: {made[0]}, {made[1]} 2 1 0 1 0")  # by name
    page.shot("01-fleets")
    page.click(f"#fleets a[href$='{fleet}']")
    page.text_is("#rollup", "2 total, 1 ready, 0 progressing, 1 failed, 0 unknown")
    rows = sorted(_rows(page, "#fleet-clusters"))
    expected = sorted([f"{_name(stack, one)} ready", f"{_name(stack, two)} failed values do "
                       "not fit"])
    assert rows == expected
    page.shot("02-fleet")

    # On the cluster's page its deployment is the fleet's: named, linked, and read-only.
    page.open(f"/ui/cluster/{one}#tab-deployments")
    [row] = _rows(page, "#cluster-deployments")
    assert row == f"{name} Console broker floating ready Fleet deployment {fleet} (read-only)"
    assert not page.all(f"#move-{ready}") and not page.all("button.undeploy")


def _name(stack: Stack, cluster: str) -> str:
    r = stack.admin.get(f"/v2/app/{uuids.App.EdgeClusterConfiguration}/object/{cluster}")
    return str(r.json()["name"])


def test_refused_deploys_name_the_field_and_write_nothing(stack: Stack, chart: str,
                                                          cluster: str) -> None:
    session, _ = console_session(stack)
    base = f"{stack.manager.url}/ui/cluster/{cluster}"
    csrf = _csrf(session.get(base).text)
    refusals = [
        ({"name": "", "chart": chart}, "deploy-name-error", "name must be printable text"),
        ({"name": "x", "chart": "not-a-uuid"}, "deploy-chart-error",
         "chart must be a Helm chart template UUID"),
        ({"name": "x", "chart": SYSTEM_CHART}, "deploy-chart-error", "is a system chart"),
        ({"name": "x", "chart": str(uuid.uuid4())}, "deploy-chart-error",
         "no Helm chart template"),
        ({"name": "x", "chart": chart, "hostname": "edge-9"}, "deploy-hostname-error",
         "reported no host &#39;edge-9&#39;"),
        ({"name": "x", "chart": chart, "values": "[1, 2]"}, "deploy-values-error",
         "values must be a JSON object"),
        ({"name": "x", "chart": chart, "values": "a: ["}, "deploy-values-error",
         "values are not YAML or JSON"),
    ]
    for form, field, message in refusals:
        r = session.post(f"{base}/deployment", data={"csrf": csrf, **form},
                         allow_redirects=False)
        assert r.status_code == 422, (form, r.status_code)
        found = re.search(f'id="{field}">([^<]*)<', r.text)
        assert found and message in found.group(1), (form, found and found.group(1))
        assert deployments_of(stack, cluster) == [], form
    # What was typed is kept for another try.
    assert 'value="x"' in r.text and "a: [</textarea>" in r.text

    ok = {"csrf": csrf, "name": "broker", "chart": chart}
    assert session.post(f"{base}/deployment", data=ok, allow_redirects=False).status_code == 303
    [made] = deployments_of(stack, cluster)
    r = session.post(f"{base}/deployment", data=ok, allow_redirects=False)
    assert r.status_code == 422 and "already has a deployment" in r.text
    assert re.search('id="deploy-name-error">[^<]*already has', r.text)
    assert deployments_of(stack, cluster) == [made]

    # A move to a host the edge never reported is refused on the row; nothing changes.
    before = _entry(stack, made)
    r = session.post(f"{base}/deployment/{made}/move", data={"csrf": csrf,
                                                             "hostname": "edge-9"})
    assert r.status_code == 422 and 'id="row-error"' in r.text and "edge-9" in r.text
    assert _entry(stack, made) == before
    # Without the session's token nothing is done.
    r = session.post(f"{base}/deployment/{made}/delete", data={"csrf": "0" * 64})
    assert r.status_code == 403 and _entry(stack, made) == before


def test_fleet_owned_deployments_cannot_be_moved_or_deleted(stack: Stack, chart: str,
                                                            cluster: str) -> None:
    root = Api(stack.manager.url, ("admin", ADMIN_PASSWORD))
    r = root.post("/v1/fleet-deployment", json={"name": "fleet-made", "chart": chart,
                                                "clusters": [cluster]})
    assert r.status_code == 201, r.text
    fleet = r.json()["uuid"]
    d = member_uuid(fleet, cluster)
    entry = wait_for(lambda: _entry(stack, d), what="the fleet's deployment written")
    session, _ = console_session(stack)
    base = f"{stack.manager.url}/ui/cluster/{cluster}"
    page = session.get(base).text
    section = page[page.index("cluster-deployments"):page.index("Deploy a chart")]
    assert f"Fleet deployment <a href=\"/ui/fleet/{fleet}\">" in section, section
    assert f'id="move-{d}"' not in page
    for action in ("move", "delete"):
        r = session.post(f"{base}/deployment/{d}/{action}",
                         data={"csrf": _csrf(page), "hostname": "edge-1"})
        assert r.status_code == 409 and f"belongs to fleet deployment {fleet}" in r.text, r.text
    assert _entry(stack, d) == entry


def test_a_read_only_user_gets_no_deploy_forms(stack: Stack, chart: str, cluster: str,
                                               reader: Reader) -> None:
    session, _ = console_session(stack, reader.name, READER_PASSWORD)
    base = f"{stack.manager.url}/ui/cluster/{cluster}"
    page = session.get(base)
    assert page.status_code == 200 and 'id="cluster-deployments"' in page.text
    assert 'id="deploy-form"' not in page.text
    r = session.post(f"{base}/deployment", data={"csrf": _csrf(page.text), "name": "sneaky",
                                                 "chart": chart})
    assert r.status_code == 403 and deployments_of(stack, cluster) == []
    r = session.get(f"{stack.manager.url}/ui/fleet")
    assert r.status_code == 403 and "Fleet deployment app" in r.text


def _fleet_names(stack: Stack) -> list[str]:
    r = Api(stack.manager.url, ("admin", ADMIN_PASSWORD)).get("/v1/fleet-deployment")
    assert r.status_code == 200, r.text
    return [f["name"] for f in r.json()["fleetDeployments"]]


def test_create_a_fleet_deployment_and_its_refusals(stack: Stack, chart: str) -> None:
    session, _ = console_session(stack)
    base = f"{stack.manager.url}/ui/fleet"
    page = session.get(base).text
    offered = re.findall(r'<option value="([0-9a-f-]{36})"', page)
    assert chart in offered and SYSTEM_CHART not in offered
    name = f"ui-fleet-{uuid.uuid4().hex[:8]}"
    form = {"csrf": _csrf(page), "name": name, "chart": chart}
    refusals = [
        ({"selector": "env in"}, "fleet-selector-error", "selector: "),
        ({"selector": ""}, "fleet-selector-error", "needs a selector, clusters, or both"),
        ({"selector": "env=prod", "chart": str(uuid.uuid4())}, "fleet-chart-error",
         "is not a Helm chart template"),
        ({"selector": "env=prod", "values": "- 1"}, "fleet-values-error",
         "values must be a JSON object"),
        ({"selector": "env=prod", "name": ""}, "fleet-name-error", "name must be printable"),
    ]
    for extra, field, message in refusals:
        r = session.post(base, data={**form, **extra}, allow_redirects=False)
        assert r.status_code == 422, (extra, r.status_code)
        found = re.search(f'id="{field}">([^<]*)<', r.text)
        assert found and message in found.group(1), (extra, found and found.group(1))
        assert name not in _fleet_names(stack), extra

    r = session.post(base, data={**form, "selector": "ui-site=nowhere,env in (a,b)",
                                 "values": "replicas: 3"}, allow_redirects=False)
    assert r.status_code == 303, r.text
    fleet = r.headers["Location"].rsplit("/", 1)[-1]
    spec = Api(stack.manager.url, ("admin", ADMIN_PASSWORD)).get(
        f"/v1/fleet-deployment/{fleet}").json()["spec"]
    assert {k: spec[k] for k in ("name", "chart", "selector", "values")} == {
        "name": name, "chart": chart, "values": {"replicas": 3},
        "selector": {"matchLabels": {"ui-site": "nowhere"}, "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["a", "b"]}]}}
    detail = session.get(f"{base}/{fleet}").text
    assert "0 total, 0 ready" in detail and "<code>ui-site=nowhere</code>" in detail
    assert "<code>env In (a, b)</code>" in detail and "It targets no cluster." in detail
