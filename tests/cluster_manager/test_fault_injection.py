"""Crash safety: SIGKILL the Cluster Manager at random points and it still converges.

Every step must be idempotent and resume from the setup status entry, so however often the
process dies, the end state has each configured cluster ready at its latest spec, nothing
left of deleted ones, no duplicate principals or grants, and intact repos.

Random kills find the windows by chance; the crash-point tests below rebuild, by hand, the
exact state a kill between two given steps leaves (with the manager down), then start the
manager and check that it finishes the job.
"""

from __future__ import annotations

import json
import random
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from fplus.cluster_manager.reconcile.manager_account import PRINCIPAL_NAME, password_file
from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import STATUS, Stack, create_cluster, start_stack, status
from tests.cluster_manager.faults import (
    AdminPool,
    check_accounts,
    check_self_link,
    check_status_points_at,
    config_with_etag,
    create_clusters,
    delete_config,
    edge_principals,
    fsck_all,
    members,
    poll,
    principal_names,
    repo_path,
    search,
    set_config,
    stored_repos,
)

SEED = 20240604
KILLS = 20
CLUSTERS = 30
NAMESPACE, MOVED_NAMESPACE = "fplus-edge", "moved-edge"
CONVERGE_TIMEOUT = 60.0
RESUME_TIMEOUT = 15.0
# at these iterations, (deleted, moved) clusters; while the manager runs, then while it is dead
WHILE_RUNNING, WHILE_DEAD = 6, 12


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    running = start_stack(tmp_path)
    yield running
    running.stop()


@pytest.fixture
def pool(stack: Stack) -> Iterator[AdminPool]:
    sessions = AdminPool(stack, workers=8)
    yield sessions
    sessions.close()


def _change(admin: Api, clusters: dict[str, str], doomed: list[str], moved: list[str]) -> None:
    for cluster in doomed:
        delete_config(admin, cluster)
    for cluster in moved:
        set_config(admin, cluster, clusters[cluster], MOVED_NAMESPACE)


def _phases(admin: Api) -> dict[str, dict[str, Any]]:
    """Every setup status: ``{cluster: {phase, ready, etag, error}}`` (one request)."""
    return search(admin, STATUS, phase="phase", ready="ready", etag="observedEtag",
                  error="error")


def _stale(seen: dict[str, dict[str, Any]], etags: dict[str, str]) -> dict[str, Any]:
    """Kept clusters not yet Ready at their current entry, with what their status says."""
    want = {c: {"phase": "Ready", "ready": True, "etag": etag} for c, etag in etags.items()}
    return {c: seen.get(c) for c, w in want.items() if seen.get(c) != w}


def _converged(admin: Api, etags: dict[str, str], doomed: set[str]) -> bool:
    """Every kept cluster Ready at its current entry; no status left for deleted ones."""
    seen = _phases(admin)
    return not _stale(seen, etags) and not doomed & set(seen)


def _not_converged(admin: Api, etags: dict[str, str], doomed: set[str]) -> dict[str, Any]:
    seen = _phases(admin)
    return {"stale": _stale(seen, etags), "deleted but still there": sorted(doomed & set(seen))}


@pytest.mark.slow
def test_killed_twenty_times_the_manager_still_converges(stack: Stack,
                                                         pool: AdminPool) -> None:
    rng = random.Random(SEED)
    admin = stack.admin
    clusters = create_clusters(pool, (f"crash-{i:02d}" for i in range(CLUSTERS)), NAMESPACE)
    order = sorted(clusters)
    rng.shuffle(order)
    doomed, moved = order[:5], order[5:10]
    for i in range(KILLS):
        if i == WHILE_RUNNING:
            _change(admin, clusters, doomed[:3], moved[:3])
        time.sleep(rng.uniform(0.05, 0.6))
        stack.manager.stop(signal.SIGKILL)
        if i == WHILE_DEAD:
            _change(admin, clusters, doomed[3:], moved[3:])
        stack.restart_manager()

    kept = {c: n for c, n in clusters.items() if c not in doomed}
    current = {c: config_with_etag(admin, c) for c in kept}
    etags = {c: etag for c, (_, etag) in current.items()}
    poll(lambda: _converged(admin, etags, set(doomed)), CONVERGE_TIMEOUT,
         "convergence after the kills", detail=lambda: _not_converged(admin, etags, set(doomed)))

    # no duplicate principals, none for deleted clusters, nothing but the kept clusters' own
    principals = edge_principals(admin)
    twice = {name: uuids_ for name, uuids_ in principals.items() if len(uuids_) > 1}
    assert not twice, f"duplicate principals: {twice}"
    expected = {p for name in kept.values() for p in principal_names(name).values()}
    assert set(principals) == expected, (
        f"missing {sorted(expected - set(principals))}, extra {sorted(set(principals) - expected)}")
    edge_accounts = members(admin, uuids.Class.EdgeAccount)
    held = {u for uuids_ in principals.values() for u in uuids_}
    assert len(held & edge_accounts) == 2 * len(kept)
    assert edge_accounts <= held, f"Edge account objects left: {sorted(edge_accounts - held)}"

    # no duplicate or missing grants; the setup status names the principals found by name
    accounts = check_accounts(pool, kept, principals)
    check_status_points_at(admin, accounts)

    # the latest spec reached each status and repo; deleted clusters' entries and repos gone
    specs = search(admin, STATUS, name="spec.name", namespace="spec.namespace")
    problems = [f"{c}: spec {specs.get(c)} != {config}" for c, (config, _) in current.items()
                if specs.get(c) != config]
    problems += [wrong for c, (config, _) in current.items()
                 if (wrong := check_self_link(stack, c, config["namespace"]))]
    assert not problems, problems[:5]
    assert {current[c][0]["namespace"] for c in moved} == {MOVED_NAMESPACE}
    for app in (uuids.App.SparkplugAddress, uuids.App.GitRepoConfig):
        assert not set(doomed) & set(search(admin, app)), f"left in {app}"
    assert not any(repo_path(stack, c).exists() for c in doomed)

    central = {uuids.Shared.HelmChartsRepo, uuids.Shared.FluxSystemRepo}
    repos = [p for p in stored_repos(stack) if p.name.removesuffix(".git") not in central]
    assert {p.name.removesuffix(".git") for p in repos} == set(kept)
    assert fsck_all(repos) == len(kept)


# -- crash points, rebuilt by hand ----------------------------------------------------------
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def crash_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = start_stack(tmp_path_factory.mktemp("crash-points"))
    yield running
    running.stop()


@contextmanager
def manager_killed(stack: Stack) -> Iterator[Api]:
    """SIGKILL the manager, let the caller shape the state it left, then start it again."""
    stack.manager.stop(signal.SIGKILL)
    yield stack.admin
    stack.restart_manager()


def _ready(stack: Stack, cluster: str) -> dict[str, Any]:
    admin = stack.admin
    return poll(lambda: (s := status(admin, cluster)) and s.get("phase") == "Ready" and s,
                RESUME_TIMEOUT, f"{cluster} ready", interval=0.1,
                detail=lambda: status(admin, cluster))


def _patch_status(admin: Api, cluster: str, patch: dict[str, Any]) -> None:
    r = admin.patch(f"/v2/app/{STATUS}/object/{cluster}", data=json.dumps(patch),
                    headers=MERGE)
    assert r.status_code in (201, 204), r.text


def _half_created_principal(stack: Stack, admin: Api, cluster: str, name: str) -> str:
    """What update() leaves when killed right after creating the Flux principal: the status
    says Provisioning, the Sparkplug address is written, the principal has no grants."""
    _patch_status(admin, cluster, {"spec": {"name": name, "namespace": NAMESPACE},
                                   "phase": "Provisioning", "error": None, "ready": False})
    r = admin.put(f"/v2/app/{uuids.App.SparkplugAddress}/object/{cluster}",
                  json={"group_id": f"ACS-{name}"})
    assert r.status_code in (201, 204), r.text
    # made by the Cluster Manager itself, as update() makes it: it owns the principal, and
    # may label only the objects it owns
    manager = Api(stack.store.url, (PRINCIPAL_NAME,
                                    password_file(stack.root / "cm").read_text().strip()))
    r = manager.post("/v2/principal", json={"name": f"op1flux/{name}",
                                            "class": uuids.Class.EdgeAccount})
    assert r.status_code == 201, r.text
    return r.json()["uuid"]


def _what_is_left(stack: Stack, cluster: str, name: str, accounts: list[str]) -> list[str]:
    admin = stack.admin
    st = status(admin, cluster)
    left = [f"setup status (phase {st.get('phase')}, flux {st.get('flux')})"] if st else []
    left += [f"principal {p}" for p in principal_names(name).values()
             if admin.get(f"/v2/identity/kerberos/{p}").status_code != 404]
    left += [f"object {a}" for a in accounts if admin.get(f"/v2/object/{a}").status_code != 404]
    left += [f"grants of {a}" for a in accounts
             if admin.post("/v2/grant/find", json={"principal": a}).json()]
    left += [f"entry in {app}" for app in (uuids.App.SparkplugAddress, uuids.App.GitRepoConfig)
             if admin.get(f"/v2/app/{app}/object/{cluster}").status_code != 404]
    left += ["live repo"] if repo_path(stack, cluster).exists() else []
    return left


def _nothing_left(stack: Stack, cluster: str, name: str, accounts: list[str]) -> None:
    poll(lambda: not _what_is_left(stack, cluster, name, accounts), RESUME_TIMEOUT,
         f"{name} decommissioned", detail=lambda: _what_is_left(stack, cluster, name, accounts))


def _delete_then_remove_flux(stack: Stack, name: str, *, object_too: bool) -> None:
    """Killed in delete(), inside or just after remove_account(flux), before recording it."""
    cluster = create_cluster(stack.admin, name)
    st = _ready(stack, cluster)
    flux, sync = st["flux"]["uuid"], st["sync"]["uuid"]
    with manager_killed(stack) as admin:
        delete_config(admin, cluster)
        _patch_status(admin, cluster, {"phase": "Deleting", "ready": False})
        assert admin.delete(f"/v2/principal/{flux}").status_code == 204
        if object_too:
            assert admin.delete(f"/v2/object/{flux}").status_code == 204
    _nothing_left(stack, cluster, name, [flux, sync])


def test_crash_between_removing_credentials_and_object_resumes(crash_stack: Stack) -> None:
    _delete_then_remove_flux(crash_stack, "cp-credentials-gone", object_too=False)


def test_crash_after_removing_an_account_before_recording_it_resumes(
        crash_stack: Stack) -> None:
    _delete_then_remove_flux(crash_stack, "cp-account-gone", object_too=True)


def test_crash_before_granting_a_new_principal_resumes(crash_stack: Stack) -> None:
    stack, name = crash_stack, "cp-ungranted"
    with manager_killed(stack) as admin:
        cluster = create_cluster(admin, name)
        half = _half_created_principal(stack, admin, cluster, name)
    st = _ready(stack, cluster)
    assert st["flux"]["uuid"] == half  # found by name again, not created twice
    pool = AdminPool(stack, workers=2)
    try:
        accounts = check_accounts(pool, {cluster: name}, edge_principals(stack.admin))
    finally:
        pool.close()
    check_status_points_at(stack.admin, accounts)


def test_crash_before_granting_a_new_principal_then_delete_leaves_nothing(
        crash_stack: Stack) -> None:
    stack, name = crash_stack, "cp-ungranted-gone"
    with manager_killed(stack) as admin:
        cluster = create_cluster(admin, name)
        half = _half_created_principal(stack, admin, cluster, name)
        delete_config(admin, cluster)
    _nothing_left(stack, cluster, name, [half])


def test_crash_before_recording_granted_accounts_then_delete_leaves_nothing(
        crash_stack: Stack) -> None:
    """Killed after the accounts, Git entry and repo, before the final status patch."""
    stack, name = crash_stack, "cp-unrecorded-gone"
    cluster = create_cluster(stack.admin, name)
    st = _ready(stack, cluster)
    with manager_killed(stack) as admin:
        r = admin.put(f"/v2/app/{STATUS}/object/{cluster}",
                      json={"spec": st["spec"], "phase": "Provisioning", "error": None,
                            "ready": False})
        assert r.status_code == 204, r.text
        delete_config(admin, cluster)
    _nothing_left(stack, cluster, name, [st["flux"]["uuid"], st["sync"]["uuid"]])
