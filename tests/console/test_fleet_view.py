"""The console's fleet view in a real headless Chromium: the list searched by a run's tag,
paged five at a time in name order, filtered by phase (through the form and through a phase
count) and by sync state, the Failed clusters' errors inline, the SYNC column, and the edge's
last report as a relative time with the time itself as its title."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from harness.servers import ADMIN_PASSWORD
from harness.stack import Stack, create_cluster, status, wait_for
from tests.cluster_manager.api.test_cluster_list import _flux, seed_failing
from tests.console.test_browser import Page, _report_edge

FAILING = 12


def _names(page: Page) -> list[str]:
    return [row.find_element(By.CSS_SELECTOR, "td a").text
            for row in page.all("#cluster-rows tr[data-uuid]")]


def test_search_filter_and_page_the_fleet(stack: Stack, browser: Any, tmp_path: Path) -> None:
    tag = "cv" + uuid.uuid4().hex[:6]
    online = create_cluster(stack.admin, f"{tag}-alpha")
    quiet = create_cluster(stack.admin, f"{tag}-bravo")
    failed = seed_failing(stack, [f"{tag}-f{i:02d}" for i in range(FAILING)])
    for cluster in (online, quiet):
        wait_for(lambda c=cluster: (status(stack.admin, c) or {}).get("ready"), what="ready")
    seen = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _report_edge(stack, online, lastSeen=seen, appliedCommit=status(stack.admin, online)[
        "commit"], flux=_flux("True"))
    every = sorted([f"{tag}-alpha", f"{tag}-bravo", *failed.values()])

    page = Page(browser, stack.manager.url, tmp_path / "screenshots")
    page.sign_in("admin", ADMIN_PASSWORD)
    page.open("/ui/?limit=5")
    page.fill({"q": tag})
    page.click("#filter")
    page.text_is("#shown", f"5 shown of {len(every)}")
    assert "q=" + tag in browser.current_url and "limit=5" in browser.current_url
    counts = {c.get_attribute("data-phase"): c.find_element(By.TAG_NAME, "b").text
              for c in page.all("#phase-counts a")}
    assert counts == {"": str(len(every)), "Failed": str(FAILING), "Online": "1", "Ready": "1"}
    page.shot("01-searched")

    listed = _names(page)
    while page.all("#next-page"):
        page.click("#next-page")
        page.find("#first-page")
        listed += _names(page)
    assert listed == every  # name order, every cluster once, five to a page
    page.click("#first-page")
    page.text_is("#shown", "5 shown of")
    assert _names(page) == every[:5]

    Select(page.find("#phase")).select_by_value("Failed")
    page.click("#filter")
    page.text_is("#shown", f"5 shown of {FAILING}")
    rows = page.all("#cluster-rows tr[data-uuid]")
    assert all("unknown chart" in r.find_element(By.CSS_SELECTOR, ".error-inline").text
               for r in rows)
    page.shot("02-failed-inline-errors")

    Select(page.find("#phase")).select_by_value("")
    Select(page.find("#sync")).select_by_value("Synced")
    page.click("#filter")
    page.text_is("#shown", "1 shown of 1")
    [row] = page.all("#cluster-rows tr[data-uuid]")
    cells = row.find_elements(By.TAG_NAME, "td")
    assert [c.text for c in cells[:4]] == [f"{tag}-alpha", "", "Online", "Synced"]  # no labels
    when = cells[4].find_element(By.TAG_NAME, "time")
    assert when.text == "just now" or when.text.endswith(" s ago") or when.text.endswith(
        " min ago"), when.text
    assert when.get_attribute("title") == seen.replace("T", " ").replace("Z", " UTC")
    assert page.find("#phase-counts a[data-phase=Online] b").text == "1"
    page.shot("03-synced")

    page.click("#clear")
    page.text_is("#shown", "shown of")
    page.open(f"/ui/?q={tag}&limit=5")
    page.click("#phase-counts a[data-phase=Ready]")
    page.text_is("#shown", "1 shown of 1")
    [row] = page.all("#cluster-rows tr[data-uuid]")
    assert row.get_attribute("data-uuid") == quiet
    assert [c.text for c in row.find_elements(By.TAG_NAME, "td")[2:5]] == [
        "Ready", "Unknown", "never"]
