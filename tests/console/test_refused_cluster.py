"""A cluster refused at creation (a Flux version never imported) is shown by the name it was
requested under, in Chromium and by ``fplus cluster get``, and the console deletes it once
that name is typed (its UUID is refused)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from harness.servers import ADMIN_PASSWORD
from harness.stack import Stack, create_cluster, status, wait_for
from tests.console.conftest import cluster_names
from tests.console.test_browser import Page
from tests.fplus_cli.test_journey import FPLUS


def test_a_refused_cluster_is_named_and_deleted_by_its_name(
        stack: Stack, browser: Any, tmp_path: Path) -> None:
    name = "refused-by-name"
    cluster = create_cluster(stack.admin, name, fluxVersion="v9.9.9")
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("phase") == "Failed",
             what="refused at creation")
    assert "spec" not in (status(stack.admin, cluster) or {})  # nothing accepted yet

    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FPLUS_") and k != "CONFIG_STORE_URL"} | {
        "XDG_CONFIG_HOME": str(tmp_path / "config"), "NO_COLOR": "1",
        "FPLUS_URL": stack.manager.url, "CONFIG_STORE_URL": stack.store.url,
        "FPLUS_USER": "admin", "FPLUS_PASSWORD": ADMIN_PASSWORD}
    shown = subprocess.run([FPLUS, "cluster", "get", cluster, "-o", "wide"], env=env,
                           capture_output=True, text=True, timeout=60,
                           check=True).stdout.splitlines()  # wide: with the UUID
    [row] = [line for line in shown if cluster in line]
    assert row.split()[:3] == [name, cluster, "Failed"], shown

    page = Page(browser, stack.manager.url, tmp_path / "screenshots")
    page.sign_in("admin", ADMIN_PASSWORD)
    page.open(f"/ui/cluster/{cluster}")
    assert page.find("h1").text == name
    assert page.find("label[for=confirm]").text == f"Type {name} to delete this cluster"
    page.shot("01-refused")
    page.fill({"confirm": cluster})
    page.click("#delete")
    assert page.find("#delete-error").text == f"Type {name} to confirm."
    assert name in cluster_names(stack)  # the UUID deletes nothing
    page.fill({"confirm": name})
    page.click("#delete")
    page.text_is(".notice", "Deletion requested")
    wait_for(lambda: name not in cluster_names(stack), what="the refused cluster gone")
