"""The shared repos' first commits: written once, retried after a failure, and given up when
leadership ends."""

from __future__ import annotations

import threading

from fplus.cluster_manager.reconcile.shared_repos import READMES, ensure_shared_repos
from tests.cluster_manager.reconcile.fakes import FakeRepos


def test_writes_the_readme_once() -> None:
    repos = FakeRepos()
    stop = threading.Event()
    assert ensure_shared_repos(repos, stop)
    assert ensure_shared_repos(repos, stop)  # a new leader: nothing to commit
    assert {repo: files["README.md"].decode() for repo, files in repos.files.items()} == READMES
    assert repos.commits == len(READMES) == 2


def test_a_failure_is_retried() -> None:
    repos = FakeRepos(fail_next=ConnectionError("git server down"))
    assert ensure_shared_repos(repos, threading.Event(), delays=(0.01, 0.02))
    assert set(repos.files) == set(READMES)


def test_stops_when_leadership_ends() -> None:
    class Down(FakeRepos):
        def write(self, *args: object) -> object:
            stop.set()  # leadership ends while the Git server is down
            raise ConnectionError("git server down")

    stop = threading.Event()
    assert ensure_shared_repos(Down(), stop, delays=(0.01, 0.02)) is False
