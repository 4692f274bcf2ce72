"""Every console page checked with axe-core in Chromium: no serious or critical violation
(form fields with labels, controls reachable by keyboard and named for screen readers,
contrast, landmarks), each tab of a cluster's page too; the tabs move with the arrow keys.

With ``FPLUS_SCREENSHOTS=1`` (``make screenshots``) the pages docs/console.md shows are
saved to docs/console/ as they look on this run, so the pictures follow the console."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from axe_selenium_python import Axe
from selenium.webdriver.common.keys import Keys

from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, create_cluster, status, wait_for
from tests.cluster_manager.api.conftest import report_edge
from tests.cluster_manager.api.test_deployments import HOSTS, make_chart
from tests.console.test_browser import Page

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "console"
SEVERE = ("serious", "critical")
PICTURES = ("clusters", "cluster", "cluster-deployments", "fleet-deployment", "rollout")
"""The pages docs/console.md shows, by file name."""


def _check(page: Page, what: str) -> None:
    """No serious or critical axe-core violation on the page as it shows now."""
    axe = Axe(page.driver)
    axe.inject()
    found = axe.run()["violations"]
    severe = [v for v in found if v.get("impact") in SEVERE]
    assert not severe, f"{what}: {axe.report(severe)}"


def _picture(page: Page, name: str) -> None:
    """The page as docs/console/<name>.png, when pictures are asked for."""
    assert name in PICTURES, name
    if os.environ.get("FPLUS_SCREENSHOTS") == "1":
        SHOTS.mkdir(exist_ok=True)
        page.driver.execute_script("window.scrollTo(0, 0)")
        assert page.driver.save_screenshot(str(SHOTS / f"{name}.png"))


def test_every_page_passes_axe(stack: Stack, browser: Any, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:6]
    root = Api(stack.manager.url, ("admin", ADMIN_PASSWORD))
    made = [create_cluster(stack.admin, f"{site}-line-{tag}",
                           labels={"site": site, "tier": "line"})
            for site in ("leeds", "york", "hull")]
    for cluster in made:
        wait_for(lambda c=cluster: (status(stack.admin, c) or {}).get("ready"), what="ready")
    report_edge(stack, made[0], hosts=HOSTS)
    chart = make_chart(stack, f"Historian {tag}", chart="historian")
    r = root.post("/v1/cluster/" + made[0] + "/deployment",
                  json={"name": "historian", "chart": chart, "hostname": "edge-1"})
    assert r.status_code == 201, r.text
    r = root.post("/v1/fleet-deployment", json={
        "name": f"historian-{tag}", "chart": chart,
        "selector": {"matchLabels": {"tier": "line"},
                     "matchExpressions": [{"key": "site", "operator": "In",
                                           "values": ["leeds", "york", "hull"]}]},
        "rollout": {"steps": [{"clusters": 1}, {"clusters": "100%"}]}})
    assert r.status_code == 201, r.text
    fleet = r.json()["uuid"]
    wait_for(lambda: root.get(f"/v1/rollout/{fleet}").json().get("state") != "Pending",
             timeout=60, what="the rollout begun")

    page = Page(browser, stack.manager.url, tmp_path / "screenshots")
    page.open("/ui/login")
    page.find("#username")
    _check(page, "sign-in")
    page.sign_in("admin", ADMIN_PASSWORD)
    page.open(f"/ui/?q=-line-{tag}")
    page.text_is("#cluster-rows", f"york-line-{tag}")
    _check(page, "cluster list")
    _picture(page, "clusters")
    page.open("/ui/new")
    _check(page, "new cluster")
    page.fill({"name": f"axe-new-{tag}"})
    page.click("#preview-change")
    page.find("#confirm-change")
    _check(page, "new cluster preview")
    page.open("/ui/fleet")
    page.fill({"fleet-name": f"axe-fleet-{tag}", "fleet-selector": "site=leeds,tier=line"})
    page.click("#create-fleet")
    page.find("#preview")  # its clusters, or their refusals: either checked
    _check(page, "fleet deployment preview")

    page.open(f"/ui/cluster/{made[0]}")
    page.find("#tablink-overview")
    _check(page, "cluster overview")
    _picture(page, "cluster")
    tab = page.find("#tablink-overview")
    tab.send_keys(Keys.ARROW_RIGHT)  # the tabs move with the arrow keys
    assert page.find("#tablink-deployments").get_attribute("aria-selected") == "true"
    assert browser.switch_to.active_element.get_attribute("id") == "tablink-deployments"
    for name in ("deployments", "secrets", "history"):
        page.click(f"#tablink-{name}")
        _check(page, f"cluster {name}")
        if name == "deployments":
            _picture(page, "cluster-deployments")

    for path, what in ((f"/ui/fleet/{fleet}", "fleet-deployment"), ("/ui/fleet", "fleets"),
                       (f"/ui/rollout/{fleet}", "rollout"), ("/ui/rollout", "rollouts"),
                       ("/ui/audit", "audit"), ("/ui/window", "windows")):
        page.open(path)
        page.find("h1")
        _check(page, what)
        if what in ("fleet-deployment", "rollout"):
            _picture(page, what)
