"""200 clusters at once: all commissioned, each exactly once, then all decommissioned.

Completion is asserted, never timing: the time-outs are generous for a 2-core machine.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from fplus.config_store import uuids
from harness.stack import STATUS, Stack
from tests.cluster_manager.faults import (
    AdminPool,
    check_accounts,
    check_self_link,
    check_status_points_at,
    create_clusters,
    delete_config,
    edge_principals,
    entries,
    fsck_all,
    members,
    poll,
    principal_names,
    ready_clusters,
    repo_path,
    search,
    service_groups,
)

CLUSTERS = 200
NAMESPACE = "fplus-edge"
READY_TIMEOUT = 120.0
GONE_TIMEOUT = 120.0
FSCK_SAMPLE = 10

pytestmark = pytest.mark.slow  # a scale test: `make test-slow`


@pytest.fixture(scope="module")
def pool(stack: Stack) -> Iterator[AdminPool]:
    sessions = AdminPool(stack, workers=8)
    yield sessions
    sessions.close()


@pytest.fixture(scope="module")
def commissioned(stack: Stack, pool: AdminPool) -> dict[str, str]:
    """200 clusters created at once and all ready: ``{uuid: name}``."""
    clusters = create_clusters(pool, (f"scale-{i:03d}" for i in range(CLUSTERS)), NAMESPACE)
    admin = stack.admin
    poll(lambda: set(clusters) <= ready_clusters(admin), READY_TIMEOUT,
         f"{CLUSTERS} clusters ready",
         detail=lambda: f"{len(set(clusters) - ready_clusters(admin))} not ready")
    return clusters


def test_every_cluster_is_commissioned_exactly_once(stack: Stack, pool: AdminPool,
                                                    commissioned: dict[str, str]) -> None:
    admin = stack.admin
    phases = search(admin, STATUS, phase="phase", error="error")
    assert {phases[c].get("phase") for c in commissioned} == {"Ready"}
    assert not any(phases[c].get("error") for c in commissioned)

    principals = edge_principals(admin)
    accounts = check_accounts(pool, commissioned, principals)
    check_status_points_at(admin, accounts)
    assert len(principals) == 2 * CLUSTERS  # nobody else's, none twice (check_accounts)

    addresses = search(admin, uuids.App.SparkplugAddress, group_id="group_id")
    git_config = search(admin, uuids.App.GitRepoConfig, path="path")
    groups = service_groups(admin)
    in_repo_group = members(admin, groups["cluster"])
    problems: list[str] = []
    for cluster, name in commissioned.items():
        if addresses.get(cluster) != {"group_id": f"ACS-{name}"}:
            problems.append(f"{name}: Sparkplug address {addresses.get(cluster)}")
        if git_config.get(cluster) != {"path": f"cluster/{name}"}:
            problems.append(f"{name}: Git config {git_config.get(cluster)}")
        if cluster not in in_repo_group:
            problems.append(f"{name}: not in the repo group")
        if wrong := check_self_link(stack, cluster, NAMESPACE):
            problems.append(wrong)
    assert not problems, f"{len(problems)} problems, e.g. {problems[:5]}"
    for role in ("flux", "sync"):
        assert members(admin, groups[role]) >= {a[role] for a in accounts.values()}

    sample = random.Random(4).sample(sorted(commissioned), FSCK_SAMPLE)
    assert fsck_all(repo_path(stack, c) for c in sample) == FSCK_SAMPLE


def _leftovers(stack: Stack, clusters: dict[str, str], accounts: set[str]) -> dict[str, int]:
    """What is still there of ``clusters`` (only non-zero counts)."""
    admin = stack.admin
    ours = set(clusters)
    names = {pname for name in clusters.values() for pname in principal_names(name).values()}
    groups = service_groups(admin)
    left = {
        "setup statuses": len(ours & entries(admin, STATUS)),
        "principals": len(names & set(edge_principals(admin))),
        "account objects": len(accounts & members(admin, uuids.Class.EdgeAccount)),
        "Git config entries": len(ours & entries(admin, uuids.App.GitRepoConfig)),
        "Sparkplug addresses": len(ours & entries(admin, uuids.App.SparkplugAddress)),
        "repo group members": len(ours & members(admin, groups["cluster"])),
        "live repos": sum(repo_path(stack, c).exists() for c in ours),
    }
    return {what: n for what, n in left.items() if n}


def test_deleting_every_entry_leaves_nothing_behind(stack: Stack, pool: AdminPool,
                                                    commissioned: dict[str, str]) -> None:
    principals = edge_principals(stack.admin)
    accounts = {u for name in commissioned.values()
                for pname in principal_names(name).values() for u in principals.get(pname, [])}
    assert len(accounts) == 2 * CLUSTERS
    pool.map(delete_config, commissioned)
    poll(lambda: not _leftovers(stack, commissioned, accounts), GONE_TIMEOUT,
         f"{CLUSTERS} clusters decommissioned",
         detail=lambda: _leftovers(stack, commissioned, accounts))
    archived = {p.name.split(".", 1)[0] for p in (stack.root / "git/archive").iterdir()}
    assert archived >= set(commissioned)
