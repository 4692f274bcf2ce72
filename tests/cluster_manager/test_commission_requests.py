"""What commissioning, teardown and a bootstrap script cost in Config Store requests, counted in
the Config Store's access log on a real stack (a count, not a timing)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import STATUS, Stack, create_cluster, start_stack, wait_for
from tests.cluster_manager.api.test_bootstrap import credentials

LINE = re.compile(r'"(\w+) (/\S*) HTTP/1\.1" (\d{3})')


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The whole stack, its Config Store writing an access log."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ACCESS_LOG", "1")
        running = start_stack(tmp_path_factory.mktemp("requests"))
    yield running
    running.stop()


class Requests:
    """The Config Store's access log between two marks (requests to a path of their own,
    which every request made before them precedes in the log)."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.log = Path(stack.root) / f"config_store-{stack.store.port}.log"
        self.start = self.mark()

    def mark(self) -> int:
        """Log a mark; the number of log lines up to and including it."""
        path = f"/v2/mark/{uuid.uuid4()}"
        self.stack.admin.get(path)
        return wait_for(lambda: next((i + 1 for i, line in enumerate(self.lines())
                                      if line[1] == path), None), 10, "the mark")

    def lines(self) -> list[tuple[str, str, str]]:
        return LINE.findall(self.log.read_text(errors="replace"))

    def since(self) -> list[tuple[str, str, str]]:
        """The requests since the first mark, up to a new one (the log read after the new
        mark is in it: a request answered before the mark may be logged just after)."""
        end = self.mark() - 1
        return self.lines()[self.start:end]


def polled(stack: Stack, cluster: str, done: Callable[[Any], bool]) -> int:
    """Read the cluster's setup status until ``done(status)``; how many reads it took."""
    reads = 0

    def check() -> bool:
        nonlocal reads
        reads += 1
        r = stack.admin.get(f"/v2/app/{STATUS}/object/{cluster}")
        return done(r.json() if r.status_code == 200 else None)

    wait_for(check, 60, f"{cluster}'s setup status")
    return reads


def test_a_new_cluster_costs_three_requests(stack: Stack) -> None:
    warm = create_cluster(stack.admin, "warm-1")  # the first cluster's reads warm caches
    polled(stack, warm, lambda st: bool(st and st.get("ready")))
    log = Requests(stack)
    cluster = create_cluster(stack.admin, "counted-1")  # two requests of ours
    reads = polled(stack, cluster, lambda st: bool(st and st.get("ready")))
    theirs = log.since()[2:]
    assert len(theirs) - reads <= 3, theirs  # the look, the batch, the Ready record
    assert ("POST", "/v2/batch", "200") in theirs


def test_a_removed_cluster_costs_eight_requests_and_the_git_servers_two(stack: Stack) -> None:
    cluster = create_cluster(stack.admin, "counted-2")
    polled(stack, cluster, lambda st: bool(st and st.get("ready")))
    log = Requests(stack)
    r = stack.admin.delete(f"/v2/app/{uuids.App.EdgeClusterConfiguration}/object/{cluster}")
    assert r.status_code == 204, r.text
    reads = polled(stack, cluster, lambda st: st is None)
    batch = ("POST", "/v2/batch", "200")
    # The status is gone once the last batch commits, which may be before that request is in
    # the access log: read the log until its third batch is there (a fourth still fails).
    def logged() -> list[tuple[str, str, str]]:  # each look logs a mark: leave marks out
        return [line for line in log.since()[1:] if not line[1].startswith("/v2/mark/")]

    theirs = wait_for(lambda: (t := logged()).count(batch) >= 3 and t, 10,
                      "the teardown's third batch in the access log")
    # the Cluster Manager's eight (its status; Deleting; the deployments' search; the teardown
    # commit; the edge's status; the look-up; the accounts, entries and claim; the object and
    # status), and the Git server's two checking who asks it to archive the repo
    assert len(theirs) - reads <= 10, theirs
    assert theirs.count(batch) == 3


def test_a_bootstrap_script_rotates_both_credentials_in_one_request(stack: Stack) -> None:
    cluster = create_cluster(stack.admin, "counted-3")
    polled(stack, cluster, lambda st: bool(st and st.get("ready")))
    manager = Api(stack.manager.url, stack.admin.auth)

    def url() -> str:
        r = manager.post(f"/v1/cluster/{cluster}/bootstrap-url")
        assert r.status_code == 200, r.text
        return str(r.json())

    def fetch(url: str) -> str:
        script = Api("").get(url)
        assert script.status_code == 200, script.text
        return script.text

    fetch(url())  # the first fetch reads the template, later ones follow it
    second = url()
    log = Requests(stack)
    script = fetch(second)
    theirs = log.since()
    assert [line for line in theirs if line[1].endswith("/password")] == []
    assert theirs.count(("POST", "/v2/batch", "200")) == 1, theirs
    # the setup status, the rotations' batch, and the audit row's read of the cluster's name
    assert len(theirs) <= 3, "\n".join(map(str, theirs))
    for user, password in credentials(script).values():
        assert Api(stack.store.url, (user, password)).get("/v2/whoami/uuid").status_code == 200
