"""Requests refused for want of credentials cannot fill the Cluster Manager's audit log.

The probe: 401s (``POST /v1/cluster/:c/redeploy`` without credentials, bootstrap fetches with
a junk token) each wrote an audit row, kept a year, and an INFO log line: 200 rows in 6 s
from anyone. Now a row needs a proved caller (a principal, or the cluster's own bootstrap
token), a spent URL's replays give one row, and the bootstrap refusal line is throttled. A
403 (a principal refused) is still recorded.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from harness.servers import (
    ADMIN_PASSWORD,
    Api,
    ServiceProcess,
    cluster_manager_process,
    git_server_process,
    stop_all,
)
from harness.stack import Stack, status, wait_for
from tests.conftest import make_user

FLOOD = 40
"""Requests of each refused kind."""
REFUSED_LINE = "bootstrap script refused"
PASSWORD = "stranger-password-1"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack of its own whose Cluster Manager logs at INFO (the lines counted here)."""
    root: Path = tmp_path_factory.mktemp("audit-flood")
    store = ServiceProcess(root / "cs").start()
    git = git_server_process(root / "git", store.url)
    manager = cluster_manager_process(root / "cm", store.url, git.url, root / "git" / "repos")
    manager.log_level = "INFO"
    try:
        git.start()
        manager.start()
        yield Stack(root, store, git, manager)
    finally:
        stop_all((manager, git, store))


def _rows(api: Api, after: int) -> list[dict]:
    """The request rows newer than ``after`` (not the Cluster Manager's own, status 0)."""
    r = api.get("/v1/audit", params={"limit": "1000"})
    assert r.status_code == 200, r.text
    return [row for row in r.json()["entries"] if row["seq"] > after and row["status"]]


def _log(stack: Stack) -> str:
    return next((stack.root / "cm").parent.glob("cluster_manager-*.log")).read_text()


def test_refusals_without_credentials_write_no_rows(stack: Stack) -> None:
    manager = Api(stack.manager.url, ("admin", ADMIN_PASSWORD))
    r = manager.post("/v1/cluster", json={"name": "flooded", "namespace": "fplus-edge"})
    assert r.status_code == 201, r.text
    cluster = r.json()["uuid"]
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what="cluster ready")
    url = manager.post(f"/v1/cluster/{cluster}/bootstrap-url").json()
    spent = url.split(stack.manager.url, 1)[1]
    assert requests.get(url, timeout=30).status_code == 200  # the URL is used up
    before = max((row["seq"] for row in _rows(manager, 0)), default=0)
    lines_before = _log(stack).count(REFUSED_LINE)

    anyone = Api(stack.manager.url)
    redeploy = f"/v1/cluster/{cluster}/redeploy"
    bootstrap = f"/v1/cluster/{cluster}/bootstrap"
    for _ in range(FLOOD):
        assert anyone.post(redeploy).status_code == 401
        assert anyone.post(redeploy, headers={"Authorization": "Bearer junk"}).status_code == 401
        assert anyone.get(bootstrap, params={"token": "junk"}).status_code == 401
        assert anyone.get(bootstrap).status_code == 401
        assert anyone.get(spent).status_code == 410
        assert anyone.post(f"/ui/cluster/{cluster}/redeploy",
                           allow_redirects=False).status_code in (303, 403)
    stranger = f"stranger-{uuid.uuid4().hex[:8]}"
    make_user(stack.admin, stranger, PASSWORD)
    refused = Api(stack.manager.url, (stranger, PASSWORD)).post(redeploy)
    assert refused.status_code == 403

    rows = _rows(manager, before)
    seen = sorted((row["action"], row["status"], row["reason"], row["principal"]["name"])
                  for row in rows)
    assert seen == [("bootstrap-url.redeem", 410, "used", None),  # the spent URL, once
                    ("cluster.redeploy", 403, None, stranger)], seen
    lines = _log(stack).count(REFUSED_LINE) - lines_before
    assert 1 <= lines <= 3, f"{lines} refusal lines for {3 * FLOOD} refused bootstrap fetches"
