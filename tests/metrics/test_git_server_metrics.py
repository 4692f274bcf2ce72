"""The Git server's ``/metrics``: requests by route and code, pushes and clones counted."""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness.servers import Api, ServiceProcess
from tests.conftest import make_class, make_object
from tests.git_server.conftest import ADMIN, GIT_APP, Git
from tests.metrics.conftest import scrape, value

REQUESTS = "git_server_http_requests_total"
REPO_ROUTE = "/uuid/<repo>/<path:rest>"


def _repo(admin: Api) -> str:
    repo = make_object(admin, make_class(admin))
    r = admin.put(f"/v2/app/{GIT_APP}/object/{repo}", json={"path": f"metrics/{repo[:8]}"})
    assert r.status_code == 201, r.text
    return repo


def test_push_and_clone_counted(metrics_git: ServiceProcess, store_admin: Api,
                                tmp_path: Path) -> None:
    git = Git(tmp_path / "home")
    url = f"http://admin:{ADMIN[1]}@127.0.0.1:{metrics_git.port}/uuid/{_repo(store_admin)}"
    before = scrape(metrics_git.url)
    git.new_work(tmp_path / "w")
    git.push(tmp_path / "w", url)
    git.clone(url, tmp_path / "c")
    after = scrape(metrics_git.url)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("git_server_pushes_total", code="200") == 1
    assert delta("git_server_fetches_total", code="200") == 1
    assert delta(REQUESTS, route=REPO_ROUTE, method="POST", code="200") >= 2
    assert delta("git_server_http_request_duration_seconds_count", route=REPO_ROUTE) >= 4


def test_refused_push_is_a_request_not_a_push(metrics_git: ServiceProcess, store_admin: Api,
                                              tmp_path: Path) -> None:
    git = Git(tmp_path / "home")
    url = f"http://admin:wrong@127.0.0.1:{metrics_git.port}/uuid/{_repo(store_admin)}"
    before = scrape(metrics_git.url)
    git.new_work(tmp_path / "w")
    proc = git.push(tmp_path / "w", url, check=False)
    assert proc.returncode != 0
    after = scrape(metrics_git.url)
    assert value(after, "git_server_pushes_total", code="200") == \
        value(before, "git_server_pushes_total", code="200")
    assert value(after, REQUESTS, route=REPO_ROUTE, method="GET", code="401") > \
        value(before, REQUESTS, route=REPO_ROUTE, method="GET", code="401")
    assert isinstance(proc, subprocess.CompletedProcess)
