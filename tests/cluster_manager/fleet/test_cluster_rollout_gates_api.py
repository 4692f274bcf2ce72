"""Health gates and rollback of cluster rollouts on the real services: a ``fluxVersion``
rollout with ``onFailure: rollback`` gives each changed cluster its previous ``fluxVersion``
back (one that had none loses it: its repo is rendered as before) while later steps never get
it; ``offline: skip`` completes on the edges that report and gives the version to the silent
one once it reports again. The tests play the edge, as test_cluster_rollout_api does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fplus.config_store import uuids
from harness.servers import Api, run_command
from harness.stack import Stack, wait_for
from tests.cluster_manager.fleet.test_cluster_rollout_api import (
    WAIT,
    clusters,
    head,
    new_commit,
    report,
    versions,
    view_when,
)
from tests.cluster_manager.fleet.test_fleet_api import MERGE
from tests.shared_files import FLUX_INSTALL, need

CONFIG, EDGE = uuids.App.EdgeClusterConfiguration, uuids.App.EdgeClusterStatus


def _import_flux(stack: Stack) -> None:
    done = run_command("fplus.cluster_manager.cli", "import-flux", str(need(FLUX_INSTALL)),
                       "--config-store", stack.store.url, "--data-dir",
                       str(stack.root / "cm"), "--git", stack.git.url)
    assert done.returncode == 0, done.stderr


def _seen(stack: Stack, cluster: str, ago: float = 0) -> None:
    at = (datetime.now(UTC) - timedelta(seconds=ago)).isoformat(timespec="seconds")
    r = stack.admin.patch(f"/v2/app/{EDGE}/object/{cluster}",
                          json={"lastSeen": at.replace("+00:00", "Z")}, headers=MERGE)
    assert r.status_code == 204, r.text


def test_a_failed_step_rolls_the_flux_version_back(stack: Stack, root: Api) -> None:
    _import_flux(stack)
    made = clusters(stack, "rbv", 3)
    heads = {c: head(stack, c) for c in made}
    r = root.post("/v1/rollout", json={
        "name": "flux-back", "change": {"fluxVersion": "2.7.5"}, "clusters": made,
        "rollout": {"steps": [{"clusters": 1}, {"clusters": 1}], "onFailure": "rollback"}})
    assert r.status_code == 201, r.text
    ro = r.json()["uuid"]
    first = new_commit(stack, made[0], heads[made[0]])
    assert versions(stack, made) == {made[0]: "v2.7.5", made[1]: None, made[2]: None}
    report(stack, made[0], first)
    view_when(root, ro, "step 2 begun", lambda v: v["step"] == 1)
    second = new_commit(stack, made[1], heads[made[1]])
    report(stack, made[1], second, degraded=True)
    view = view_when(root, ro, "rolled back", lambda v: v["state"] == "RolledBack")
    assert made[1] in view["reason"] and view["rolledBack"] == sorted(made[:2])
    wait_for(lambda: versions(stack, made) == dict.fromkeys(made, None), timeout=WAIT,
             what="the previous fluxVersion (none) back")
    assert head(stack, made[2]) == heads[made[2]]  # the last step never saw it
    r = root.post(f"/v1/rollout/{ro}/rollback")
    assert r.status_code == 409, r.text


def test_offline_skip_completes_without_a_silent_edge_then_catches_it_up(
        stack: Stack, root: Api) -> None:
    _import_flux(stack)
    awake, asleep = clusters(stack, "skv", 2)
    _seen(stack, awake)
    _seen(stack, asleep, ago=3600)
    before = head(stack, asleep)
    r = root.post("/v1/rollout", json={
        "name": "flux-skip", "change": {"fluxVersion": "v2.7.5"}, "clusters": [awake, asleep],
        "rollout": {"offline": "skip"}})
    assert r.status_code == 201, r.text
    ro = r.json()["uuid"]
    report(stack, awake, new_commit(stack, awake, head(stack, awake)))
    view = view_when(root, ro, "complete", lambda v: v["state"] == "Complete")
    assert [s["cluster"] for s in view["skipped"]] == [asleep]
    assert versions(stack, [asleep]) == {asleep: None} and head(stack, asleep) == before
    _seen(stack, asleep)
    wait_for(lambda: versions(stack, [asleep]) == {asleep: "v2.7.5"}, timeout=WAIT,
             what="the skipped cluster given the version")
    new_commit(stack, asleep, before)
    view = view_when(root, ro, "given", lambda v: "given" in v["skipped"][0])
    assert asleep in view["updated"]
