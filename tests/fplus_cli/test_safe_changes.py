"""A change that cannot work is refused before anything is written, and every change can be
previewed, on a real stack through ``fplus`` (child processes) and the HTTP routes: the new
user's journey (a rollout of a Flux version never imported refused at ``fplus rollout
create`` naming the fix, nothing on the cluster changed; ``cluster set --flux-version
default``; a Failed cluster recovered and redeployed), ``?dryRun`` on the five routes writing
nothing, and versions given without their ``v``."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.central import flux_export
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, create_cluster, status, wait_for
from tests.fplus_cli.test_journey import fplus, login

CONFIG, ROLLOUT = uuids.App.EdgeClusterConfiguration, uuids.App.ClusterRollout
FLEET = uuids.App.FleetDeployment
FLUX_REPO = uuids.Shared.FluxSystemRepo


@pytest.fixture(scope="module")
def stack(module_stack: Stack) -> Stack:
    """A stack of its own: it counts rollouts and imports Flux versions."""
    return module_stack


def config_of(stack: Stack, cluster: str) -> tuple[dict[str, object], str]:
    resp = stack.admin.get(f"/v2/app/{CONFIG}/object/{cluster}")
    return resp.json(), resp.headers.get("ETag", "")


def commit_of(stack: Stack, cluster: str) -> str:
    found: str = wait_for(lambda: (status(stack.admin, cluster) or {}).get("commit"),
                          timeout=120, what="commissioned")
    return found


def phase(stack: Stack, cluster: str) -> str | None:
    found: str | None = (status(stack.admin, cluster) or {}).get("phase")
    return found


def stored(stack: Stack, app: str) -> list[str]:
    found: list[str] = stack.admin.get(f"/v1/app/{app}/object").json()
    return sorted(found)


def test_the_new_user_journey(stack: Stack, home: dict[str, str], tmp_path: Path) -> None:
    login(stack, home)
    site = f"s{uuid.uuid4().hex[:8]}"
    cluster = create_cluster(stack.admin, "safe-1", labels={"site": site})
    wait_for(lambda: phase(stack, cluster) == "Ready", timeout=120, what="Ready")
    before, commit = config_of(stack, cluster), commit_of(stack, cluster)

    args = ("rollout", "create", "flux-up", "--flux-version", "v2.8.0", "--selector",
            f"site={site}", "--step", "1", "--step", "50%")
    refused = fplus(home, *args, expect=1).stderr
    assert f"cluster safe-1 ({cluster}): fluxVersion: Flux v2.8.0 is not in the central " \
           "Flux repo" in refused
    assert "fplus flux import" in refused and "POST /v1/flux-version" in refused
    assert "nothing was written" in refused
    preview = fplus(home, *args, "--dry-run", expect=1)
    assert "refused: fluxVersion: Flux v2.8.0" in preview.stdout
    assert stored(stack, ROLLOUT) == []
    assert config_of(stack, cluster) == before and commit_of(stack, cluster) == commit
    assert phase(stack, cluster) == "Ready"

    # imported without its v, named without it: previewed, then taken
    export = tmp_path / "flux.yaml"
    export.write_text(flux_export("2.8.0"))
    assert "imported Flux v2.8.0" in fplus(home, "flux", "import", str(export)).stdout
    shown = fplus(home, "rollout", "create", "flux-up", "--flux-version", "2.8.0",
                  "--selector", f"site={site}", "--dry-run").stdout
    assert f"step 1: safe-1 ({cluster})" in shown
    assert "+++ b/edo/cluster/flux-system.yaml" in shown and "v2.8.0" in shown
    assert stored(stack, ROLLOUT) == [] and config_of(stack, cluster) == before
    edited = json.loads(fplus(home, "cluster", "set", "safe-1", "--flux-version", "2.8.0",
                              "-o", "json").stdout)
    assert edited["fluxVersion"] == "v2.8.0"
    assert config_of(stack, cluster)[0]["fluxVersion"] == "v2.8.0"
    assert "fluxVersion" not in json.loads(fplus(home, "cluster", "set", "safe-1",
                                                 "--flux-version", "default", "-o",
                                                 "json").stdout)

    # a cluster left Failed (its entry written straight into the Config Store) comes back
    config, etag = config_of(stack, cluster)
    stack.admin.put(f"/v2/app/{CONFIG}/object/{cluster}", json=config | {
        "fluxVersion": "v9.9.9"}, headers={"If-Match": etag}).raise_for_status()
    wait_for(lambda: phase(stack, cluster) == "Failed", timeout=120, what="Failed")
    fplus(home, "cluster", "set", "safe-1", "--flux-version", "default")
    wait_for(lambda: phase(stack, cluster) == "Ready", timeout=120, what="Ready again")
    again = commit_of(stack, cluster)
    fplus(home, "cluster", "redeploy", "safe-1")
    wait_for(lambda: commit_of(stack, cluster) != again, timeout=120, what="redeployed")
    assert phase(stack, cluster) == "Ready"


def test_dry_run_on_each_route_writes_nothing(stack: Stack) -> None:
    admin = stack.admin
    cluster = create_cluster(admin, "safe-dry", labels={"dry": "yes"})
    commit = commit_of(stack, cluster)
    configs, fleets = stored(stack, CONFIG), stored(stack, FLEET)
    manager = Api(stack.manager.url, ("admin", ADMIN_PASSWORD))

    made = manager.post("/v1/cluster?dryRun", json={"name": "safe-new",
                                                    "namespace": "fplus-edge"})
    assert made.status_code == 200, made.text
    [new] = made.json()["clusters"]
    assert made.json()["dryRun"] is True and new["name"] == "safe-new"
    assert "edo/cluster/self-link.yaml" in new["files"]["added"]
    assert "+++ b/README.md\n@@ -0,0 +1,11 @@\n+# Edge cluster repository" in new["diff"]
    assert len(new["diff"].splitlines()) == 200 and new["omitted"] > 0  # capped, counted

    edited = manager.patch(f"/v1/cluster/{cluster}?dryRun=true",
                           json={"fluxVersion": "v7.7.7"},
                           headers={"Content-Type": "application/merge-patch+json"})
    assert edited.status_code == 200, edited.text
    assert edited.json()["refused"] == [{
        "uuid": cluster, "name": "safe-dry", "field": "fluxVersion",
        "message": edited.json()["clusters"][0]["refused"]["message"]}]
    values = manager.patch(f"/v1/cluster/{cluster}?dryRun",
                           json={"values": {"colour": "blue"}})
    assert values.status_code == 200 and values.json()["refused"] == []

    rollout = manager.post("/v1/rollout?dryRun", json={
        "name": "dry", "change": {"fluxVersion": "v7.7.7"}, "clusters": [cluster],
        "rollout": {"offline": "skip"}})
    assert rollout.status_code == 200, rollout.text
    assert rollout.json()["plan"]["steps"] == [{"clusters": [{"uuid": cluster,
                                                               "name": "safe-dry"}]}]
    assert rollout.json()["refused"][0]["field"] == "fluxVersion"
    assert manager.post("/v1/rollout", json={
        "name": "dry", "change": {"fluxVersion": "v7.7.7"},
        "clusters": [cluster]}).status_code == 422

    assert stored(stack, CONFIG) == configs and stored(stack, FLEET) == fleets
    assert stored(stack, ROLLOUT) == [] and commit_of(stack, cluster) == commit
