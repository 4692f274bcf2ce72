"""A cluster's timeline in a real headless Chromium: the History section holds the changes
asked through the API, the phases the reconciler recorded (naming the Cluster Manager) and
the commits of the cluster's repo (exactly its ``git log``, newest first), each commit
linking to a page with its message and the files it changed; a sha not of that repo is a
404 naming it."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import requests
from cryptography.hazmat.primitives.asymmetric import rsa

from harness.certs import make_cert
from harness.gitcli import bare
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, status, wait_for
from tests.cluster_manager.api.conftest import report_edge
from tests.console.conftest import console_session
from tests.console.test_browser import Page, _rows


def _git(stack: Stack, cluster: str, *args: str) -> str:
    return bare(stack.repos / f"{cluster}.git", *args).strip()


def test_the_history_shows_changes_phases_and_linked_commits(
        stack: Stack, browser: Any, tmp_path: Path) -> None:
    api = Api(stack.manager.url, stack.admin.auth)
    name = f"time-{uuid.uuid4().hex[:8]}"
    r = api.post("/v1/cluster", json={"name": name, "namespace": "fplus-edge"})
    assert r.status_code == 201, r.text
    cluster = r.json()["uuid"]
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what=f"{name} ready")
    first = _git(stack, cluster, "rev-parse", "main")
    report_edge(stack, cluster, kubeseal_cert=make_cert(
        rsa.generate_private_key(public_exponent=65537, key_size=2048)))
    r = api.put(f"/v1/cluster/{cluster}/secret/app/creds/token", data=b"timeline-value")
    assert r.status_code == 204, r.text  # committed before the answer
    assert _git(stack, cluster, "rev-parse", "main") != first
    shas = _git(stack, cluster, "log", "--format=%H", "main").split()

    page = Page(browser, stack.manager.url, tmp_path / "screenshots")
    page.sign_in("admin", ADMIN_PASSWORD)
    page.open(f"/ui/cluster/{cluster}#tab-history")
    page.find("#history")
    page.shot("01-timeline")
    rows = _rows(page, "#history")
    kinds = [row.get_attribute("data-kind") for row in page.all("#history tbody tr")]
    changes = [r for r, k in zip(rows, kinds, strict=True) if k == "change"]
    assert [r.split()[2] for r in changes] == ["secret.seal", "cluster.create"]
    assert all(r.split()[1] == "admin" for r in changes)
    phases = [r for r, k in zip(rows, kinds, strict=True) if k == "phase"]
    assert [r.split()[1:] for r in phases][-2:] == [
        ["cluster-manager", "phase.changed", "→", "Ready", "ok"],
        ["cluster-manager", "phase.changed", "→", "Provisioning", "ok"]]
    links = page.all("#history tbody tr[data-kind=commit] a")
    assert [a.get_attribute("title") for a in links] == shas  # every commit, newest first
    times = [r.split()[0] for r in rows]
    assert times == sorted(times, reverse=True)

    links[0].click()
    assert "timeline-value" not in browser.page_source
    assert page.find("#commit-sha").text == shas[0]
    assert page.find("#commit-message").text == _git(stack, cluster, "log", "-1",
                                                     "--format=%B", "main")
    changed = _git(stack, cluster, "diff", "--name-only", f"{shas[0]}~1", shas[0]).split()
    assert _rows(page, "#commit-files") == changed and changed
    page.shot("02-commit")

    session, _ = console_session(stack)
    gone = "0" * 40
    r = session.get(f"{stack.manager.url}/ui/cluster/{cluster}/commit/{gone}")
    assert r.status_code == 404 and f"{gone} is not a commit" in r.text
    other = requests.get(f"{stack.manager.url}/ui/cluster/{cluster}/commit/{shas[0]}",
                         timeout=10, allow_redirects=False)
    assert other.status_code in (302, 303) and "/ui/login" in other.headers["Location"]
