"""The shared Helm charts repo's first commit: written once, retried after a failure, and
given up when leadership ends."""

from __future__ import annotations

import threading

from cluster_manager.reconcile.shared_repos import HELM_CHARTS_README, ensure_helm_charts_repo
from config_store import uuids
from tests.cluster_manager.reconcile.fakes import FakeRepos

CHARTS = uuids.Shared.HelmChartsRepo


def test_writes_the_readme_once() -> None:
    repos = FakeRepos()
    stop = threading.Event()
    assert ensure_helm_charts_repo(repos, stop)
    assert ensure_helm_charts_repo(repos, stop)  # a new leader: nothing to commit
    assert repos.files[CHARTS] == {"README.md": HELM_CHARTS_README.encode()} and repos.commits == 1


def test_a_failure_is_retried() -> None:
    repos = FakeRepos(fail_next=ConnectionError("git server down"))
    assert ensure_helm_charts_repo(repos, threading.Event(), delays=(0.01, 0.02))
    assert repos.files[CHARTS] == {"README.md": HELM_CHARTS_README.encode()}


def test_stops_when_leadership_ends() -> None:
    class Down(FakeRepos):
        def write(self, *args: object) -> object:
            stop.set()  # leadership ends while the Git server is down
            raise ConnectionError("git server down")

    stop = threading.Event()
    assert ensure_helm_charts_repo(Down(), stop, delays=(0.01, 0.02)) is False
