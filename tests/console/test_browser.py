"""The console driven by a real headless Chromium: sign in, create a cluster (a bad name first,
then its preview and Confirm), watch its badge change without a reload, copy the bootstrap
command, seal a secret, delete the cluster; then a read-only user. Screenshots of each page go
to the test's temp dir."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from fplus.config_store import uuids
from harness.certs import make_cert
from harness.servers import ADMIN_PASSWORD
from harness.stack import Stack, create_cluster, status, wait_for
from tests.console.conftest import READER_PASSWORD, Reader, cluster_names

EDGE = uuids.App.EdgeClusterStatus


class Page:
    """The browser, with the waits and screenshots a test needs."""

    def __init__(self, driver: Any, base: str, shots: Path) -> None:
        self.driver, self.base, self.shots = driver, base, shots
        shots.mkdir(exist_ok=True)

    def open(self, path: str) -> None:
        self.driver.get(self.base + path)

    def find(self, css: str) -> Any:
        return WebDriverWait(self.driver, 20).until(
            ec.presence_of_element_located((By.CSS_SELECTOR, css)))

    def all(self, css: str) -> list[Any]:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def fill(self, values: dict[str, str]) -> None:
        for field, value in values.items():
            box = self.find(f"#{field}")
            box.clear()
            box.send_keys(value)

    def click(self, css: str) -> None:
        self.find(css).click()

    def text_is(self, css: str, text: str, timeout: float = 30) -> None:
        WebDriverWait(self.driver, timeout).until(
            ec.text_to_be_present_in_element((By.CSS_SELECTOR, css), text))

    def shot(self, name: str) -> None:
        assert self.driver.save_screenshot(str(self.shots / f"{name}.png"))

    def sign_in(self, user: str, password: str) -> None:
        self.open("/ui/")
        self.find("form input#username")
        assert "/ui/login" in self.driver.current_url
        self.fill({"username": user, "password": password})
        self.click("button[type=submit].primary")
        self.find("#cluster-rows")


def _report_edge(stack: Stack, cluster: str, **fields: object) -> None:
    r = stack.admin.patch(f"/v2/app/{EDGE}/object/{cluster}", json=fields,
                          headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 204, r.text


def _rows(page: Page, table: str) -> list[str]:
    return [" ".join(row.text.split()) for row in page.all(f"{table} tbody tr")]


def test_an_operator_journey(stack: Stack, browser: Any, tmp_path: Path) -> None:
    page = Page(browser, stack.manager.url, tmp_path / "screenshots")
    page.open("/ui/")
    page.find("#username")
    page.shot("01-sign-in")
    page.fill({"username": "admin", "password": "wrong-password"})
    page.click("button[type=submit].primary")
    page.text_is("#login-error", "Wrong username or password")
    page.fill({"username": "admin", "password": ADMIN_PASSWORD})
    page.click("button[type=submit].primary")
    page.find("#cluster-rows")
    assert "Signed in as admin" in page.find(".who").text
    page.shot("02-clusters")

    page.click("a.button.primary")  # New cluster
    page.fill({"name": "Bad_Name"})
    page.click("button[type=submit].primary")
    assert "name must be a DNS-1123 label" in page.find("#name-error").text
    assert page.find("#name").get_attribute("aria-describedby") == "name-help name-error"
    page.shot("03-new-cluster-refused")
    assert "Bad_Name" not in cluster_names(stack)  # nothing was created
    page.fill({"name": "ui-edge"})
    page.click("#preview-change")
    page.text_is("#preview-summary", "Nothing is written yet")
    assert page.find("#preview-c1").text == "ui-edge" and page.find("pre.diff").text
    assert "ui-edge" not in cluster_names(stack)  # not before Confirm
    page.shot("03b-new-cluster-preview")
    page.click("#confirm-change")
    page.text_is(".notice", "Cluster requested")
    assert "ui-edge" in cluster_names(stack)
    cluster = browser.current_url.rstrip("/").split("/")[-1].split("?")[0]
    page.text_is("#phase", "Ready")
    page.shot("04-cluster-ready")

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    host = {"hostname": "edge-node-1", "arch": "arm64", "k8s_version": "v1.31.2+k3s1",
            "control_plane": True, "os_version": "Debian GNU/Linux 12", "ready": True}
    _report_edge(stack, cluster, kubeseal_cert=make_cert(key), lastSeen=now, hosts=[host],
                 deployments={"releases": ["machine-1"], "error": None,
                              "failed": [{"uuid": cluster, "name": "press-2",
                                          "error": "chart <b>gone</b>"}]},
                 flux={"objects": [{"kind": "HelmRelease", "namespace": "fplus-edge",
                                    "name": "press-2", "ready": "False",
                                    "reason": "InstallFailed", "message": "<i>no</i> chart",
                                    "since": now}],
                       "total": 1, "ready": 0, "failed": 1, "progressing": 0})
    page.text_is("#phase", "Online")  # the badge follows the edge without a reload
    browser.refresh()
    assert _rows(page, "#hosts") == [
        "edge-node-1 yes yes arm64 v1.31.2+k3s1 Debian GNU/Linux 12"]
    assert _rows(page, "#deployments") == ["machine-1 applied", "press-2 failed chart <b>gone</b>"]
    assert page.find("#sync").text.startswith("Degraded 1 object(s) failed")
    assert _rows(page, "#failing") == [
        f"HelmRelease fplus-edge/press-2 InstallFailed <i>no</i> chart {now}"]

    page.click("#get-bootstrap")
    command = page.find("#bootstrap-command").text
    assert command.startswith(f"curl -sS '{stack.manager.url}/v1/cluster/{cluster}/bootstrap")
    page.click("#copy-bootstrap")
    page.text_is("#copy-status", "Copied")
    assert page.find("#copy-bootstrap").get_attribute("data-copied") == command
    assert "plain HTTP" in page.find(".warning").text
    page.shot("05-bootstrap-command")
    script = requests.get(command.split("'")[1], timeout=10)
    assert script.status_code == 200 and script.text.startswith("#!/bin/sh")

    page.click("#tablink-secrets")
    page.fill({"seal-name": "db", "seal-key": "password", "seal-value": "hunter2"})
    page.click("#seal-form button[type=submit]")
    page.text_is(".notice", "Secret sealed")
    assert _rows(page, "#secrets") == ["fplus-edge/db strict password unknown Remove"]
    assert "hunter2" not in browser.page_source
    page.shot("06-secret-sealed")

    page.click("#tablink-overview")
    page.fill({"confirm": "not-it"})
    page.click("#delete")
    page.text_is("#delete-error", "Type ui-edge to confirm")
    assert status(stack.admin, cluster) is not None  # still there
    page.fill({"confirm": "ui-edge"})
    page.click("input[name=force]")
    page.click("#delete")
    page.text_is(".notice", "Deletion requested")
    page.shot("07-deleted")
    wait_for(lambda: status(stack.admin, cluster) is None, timeout=60, what="teardown")
    page.open("/ui/")
    assert "ui-edge" not in page.find("#cluster-rows").text

    for name in ("01-sign-in", "02-clusters", "03-new-cluster-refused", "04-cluster-ready",
                 "05-bootstrap-command", "06-secret-sealed", "07-deleted"):
        assert (tmp_path / "screenshots" / f"{name}.png").stat().st_size > 5000


def test_a_read_only_user_sees_no_buttons_and_is_refused(stack: Stack, reader: Reader,
                                                         browser: Any, tmp_path: Path) -> None:
    cluster = create_cluster(stack.admin, "ro-edge")
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what="ro-edge ready")
    page = Page(browser, stack.manager.url, tmp_path / "screenshots")
    page.sign_in(reader.name, READER_PASSWORD)
    page.open("/ui/?q=ro-edge")  # the list is paged: search for it in a busy shared stack
    assert "ro-edge" in page.find("#cluster-rows").text
    assert not page.all("a.button.primary")  # no New cluster
    page.shot("01-reader-clusters")
    page.open(f"/ui/cluster/{cluster}")
    page.text_is("#phase", "Ready")
    for control in ("#get-bootstrap", "#redeploy", "#delete", "form.grid", "#secrets"):
        assert not page.all(control), control
    page.shot("02-reader-cluster")
    # The buttons are hidden, and the API refuses anyway: a form posted with a valid token.
    csrf = page.find("form.signout input[name=csrf]").get_attribute("value")
    browser.execute_script(
        "const f = document.createElement('form'); f.method = 'post';"
        "f.action = arguments[0]; const i = document.createElement('input');"
        "i.name = 'csrf'; i.value = arguments[1]; f.appendChild(i);"
        "document.body.appendChild(f); f.submit();",
        f"/ui/cluster/{cluster}/redeploy", csrf)
    page.text_is("h1", "Not allowed")
    assert "permission" in page.find(".error").text
    page.shot("03-reader-refused")
    request = stack.admin.get(f"/v2/app/{uuids.App.EdgeClusterRequest}/object/{cluster}")
    assert request.status_code == 404 or "redeploy" not in request.json()
