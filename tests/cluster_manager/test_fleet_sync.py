"""Counting clusters by sync state, and the repo heads it rests on (no servers: a stand-in
answers the two searches the way the Config Store's v1 search does)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pygit2

from fplus.cluster_manager.model.apps_and_roles import EDGE_APP, STATUS_APP
from fplus.cluster_manager.services.fleet.repo_heads import RepoHeads
from fplus.cluster_manager.services.fleet.sync_counts import FleetSync
from fplus.config_store.client import ConfigStoreError

A, B = "a" * 40, "b" * 40


class Searches:
    """``search(app, query, select)`` over fixed answers; counts the calls; can fail."""

    def __init__(self, answers: dict[str, dict[str, Any]]) -> None:
        self.answers, self.calls, self.fail = answers, 0, False

    def search(self, app: str, query: dict[str, Any], select: dict[str, str]) -> Any:
        self.calls += 1
        if self.fail:
            raise ConfigStoreError(503, "unavailable")
        assert app != STATUS_APP or query == {"ready": True}
        return self.answers[app]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _edge(applied: str, failed: int = 0, ready: int = 2, total: int = 2) -> dict[str, Any]:
    # seen just now (taken per call: a time taken at import is stale when the test runs
    # minutes after collection, as under pytest-xdist, and a stale edge counts as Unknown)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"appliedCommit": applied, "lastSeen": now, "total": total, "ready": ready,
            "failed": failed}


def test_counts_every_state_and_serves_them_from_memory_within_the_ttl() -> None:
    heads = {"synced": A, "behind": A, "degraded": A, "silent": A, "deleting": A}
    cs = Searches({
        STATUS_APP: {c: {"phase": "Deleting" if c == "deleting" else "Ready"} for c in heads},
        EDGE_APP: {"synced": _edge(A), "behind": _edge(B), "degraded": _edge(A, failed=1),
                   "deleting": _edge(A)}})
    clock = Clock()
    fleet = FleetSync(cs, RepoHeads(heads.get, clock=clock), ttl=15, clock=clock)  # type: ignore[arg-type]
    expected = {"Synced": 1, "Progressing": 1, "Degraded": 1, "Unknown": 2}
    assert fleet.counts() == expected
    clock.now = 10
    assert fleet.counts() == expected and cs.calls == 2  # from memory
    cs.fail = True
    clock.now = 20
    assert fleet.counts() == expected  # the last count is kept when the Config Store fails
    assert cs.calls == 3


def test_repo_heads_are_cached_and_unreadable_repos_are_unknown() -> None:
    reads: list[str] = []

    def read(cluster: str) -> str | None:
        reads.append(cluster)
        if cluster == "broken":
            raise pygit2.GitError("unexpected http status code: 401")
        return A

    clock = Clock()
    heads = RepoHeads(read, ttl=2, clock=clock)
    assert heads.get("c") == A and heads.get("c") == A and reads == ["c"]
    clock.now = 3
    assert heads.get("c") == A and reads == ["c", "c"]
    assert heads.get("broken") is None
