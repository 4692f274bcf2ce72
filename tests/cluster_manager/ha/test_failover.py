"""Two replicas, 200 clusters requested, the leader killed (SIGKILL) mid-commissioning: the
standby takes over and every cluster becomes ready exactly once (one repo with one commit,
one principal per role with exactly its grants, one Sparkplug address and Git config entry).

Completion is asserted, never timing: the lease is short (3 s) only to keep the test quick.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pygit2
import pytest

from fplus.config_store import uuids
from harness.stack import STATUS
from tests.cluster_manager.faults import (
    AdminPool,
    check_accounts,
    check_status_points_at,
    create_clusters,
    edge_principals,
    members,
    poll,
    ready_clusters,
    repo_path,
    search,
    service_groups,
)
from tests.cluster_manager.ha.replicas import Replicas

CLUSTERS = 200
KILL_AT = 30
"""Ready clusters when the leader is killed."""


@pytest.fixture
def pool(replicas: Replicas) -> Iterator[AdminPool]:
    sessions = AdminPool(replicas.stack, workers=8)
    yield sessions
    sessions.close()


def _commits(cluster_repo) -> int:
    repo = pygit2.Repository(str(cluster_repo))
    return sum(1 for _ in repo.walk(repo.references["refs/heads/main"].target))


def test_killing_the_leader_mid_commissioning_converges_exactly_once(
        replicas: Replicas, pool: AdminPool) -> None:
    admin = replicas.stack.admin
    leader = poll(replicas.leader, 30, "one leader")
    standby = next(r for r in replicas.replicas if r is not leader)
    clusters: dict[str, str] = {}
    pool.workers = 4  # requests keep arriving while the leader commissions
    creating = threading.Thread(target=lambda: clusters.update(create_clusters(
        pool, (f"ha-{i:03d}" for i in range(CLUSTERS)))))
    creating.start()
    try:
        poll(lambda: len(ready_clusters(admin)) >= KILL_AT, 60, f"{KILL_AT} clusters ready",
             interval=0.1)
        leader.stop(signal.SIGKILL)
        assert len(ready_clusters(admin)) < CLUSTERS  # it was killed mid-commissioning
    finally:
        creating.join()
    _, health = poll(lambda: (found := replicas.health(standby))[1].get("role") == "leader"
                     and found, 30, "the standby to lead")
    assert health["leader"] == health["identity"]
    replicas.replace(leader)  # for the next tests: two replicas again

    poll(lambda: set(clusters) <= ready_clusters(admin), 120, f"{CLUSTERS} clusters ready",
         detail=lambda: f"{len(set(clusters) - ready_clusters(admin))} not ready")
    phases = search(admin, STATUS, phase="phase", error="error")
    assert {phases[c].get("phase") for c in clusters} == {"Ready"}
    assert not any(phases[c].get("error") for c in clusters)

    accounts = check_accounts(pool, clusters, edge_principals(admin))  # one per role and name
    check_status_points_at(admin, accounts)
    addresses = search(admin, uuids.App.SparkplugAddress, group_id="group_id")
    git_config = search(admin, uuids.App.GitRepoConfig, path="path")
    in_repo_group = members(admin, service_groups(admin)["cluster"])
    problems = [name for cluster, name in clusters.items()
                if addresses.get(cluster) != {"group_id": f"ACS-{name}"}
                or git_config.get(cluster) != {"path": f"cluster/{name}"}
                or cluster not in in_repo_group]
    assert not problems, f"{len(problems)} clusters miss an entry, e.g. {problems[:5]}"
    commits = {c: _commits(repo_path(replicas.stack, c)) for c in clusters}
    assert set(commits.values()) == {1}, {c: n for c, n in commits.items() if n != 1}
