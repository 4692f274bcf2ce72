"""Cluster rollouts on the real services: a ``fluxVersion`` over six clusters in three steps,
each step waiting for its clusters (only the started clusters' configurations and repos
change), pause and resume, a Degraded report halting it with the cluster named, abort
leaving the clusters as they are; a Flux template rollout giving only the begun steps'
clusters a new commit, complete with every cluster pinned, and the pins removed once an
operator makes the candidate the default (no new commit); refusals writing nothing.

The tests play the edge: they write each cluster's Edge cluster status entry (what Edge
Sync reports: ``appliedCommit`` and the Flux summary) as Edge Sync would.
"""

from __future__ import annotations

import uuid
from typing import Any

from fplus.config_store import uuids
from harness.gitcli import bare
from harness.servers import Api, run_command
from harness.stack import Stack, create_cluster, status, wait_for
from tests.cluster_manager.fleet.test_fleet_api import MERGE
from tests.shared_files import FLUX_INSTALL, need

CONFIG, EDGE, ROLLOUT = (uuids.App.EdgeClusterConfiguration, uuids.App.EdgeClusterStatus,
                         uuids.App.ClusterRollout)
TEMPLATE_APP = uuids.App.FluxTemplate
WAIT = 120.0


def config(stack: Stack, cluster: str) -> dict[str, Any]:
    found: dict[str, Any] = stack.admin.get(f"/v2/app/{CONFIG}/object/{cluster}").json()
    return found


def head(stack: Stack, cluster: str) -> str:
    return bare(stack.repos / f"{cluster}.git", "rev-parse", "main").strip()


def clusters(stack: Stack, prefix: str, n: int) -> list[str]:
    site = f"s{uuid.uuid4().hex[:8]}"
    made = sorted(create_cluster(stack.admin, f"{prefix}{i}", labels={"site": site})
                  for i in range(n))
    for cluster in made:
        wait_for(lambda c=cluster: (status(stack.admin, c) or {}).get("ready"), timeout=WAIT,
                 what="commissioned")
    return made


def new_commit(stack: Stack, cluster: str, before: str) -> str:
    """The cluster's commit once the Cluster Manager committed past ``before``."""
    def look() -> str | None:
        found = status(stack.admin, cluster) or {}
        commit = found.get("commit")
        return commit if found.get("ready") and commit and commit != before else None
    found: str = wait_for(look, timeout=WAIT, what=f"a new commit on {cluster}")
    return found


def report(stack: Stack, cluster: str, commit: str, degraded: bool = False) -> None:
    """The edge's report (as Edge Sync writes it): ``commit`` applied, all ready or one
    object failed."""
    objects = [{"kind": "Kustomization", "namespace": "fplus-edge", "name": "self",
                "ready": "False" if degraded else "True", "reason": "BuildFailed",
                "message": "kustomize build failed"}]
    fields = {"appliedCommit": commit,
              "flux": {"objects": objects, "total": 1, "ready": 0 if degraded else 1,
                       "failed": 1 if degraded else 0, "progressing": 0}}
    r = stack.admin.patch(f"/v2/app/{EDGE}/object/{cluster}", json=fields, headers=MERGE)
    assert r.status_code == 204, r.text


def view_when(root: Api, rollout: str, what: str, check: Any) -> dict[str, Any]:
    def look() -> dict[str, Any] | None:
        found = root.get(f"/v1/rollout/{rollout}").json()
        return found if check(found) else None
    found: dict[str, Any] = wait_for(look, timeout=WAIT, what=what)
    return found


def versions(stack: Stack, made: list[str]) -> dict[str, Any]:
    return {c: config(stack, c).get("fluxVersion") for c in made}


def test_a_flux_version_rollout_waits_per_step_pauses_halts_and_aborts(
        stack: Stack, root: Api) -> None:
    flux = need(FLUX_INSTALL)
    done = run_command("fplus.cluster_manager.cli", "import-flux", str(flux), "--config-store",
                       stack.store.url, "--data-dir", str(stack.root / "cm"), "--git",
                       stack.git.url)
    assert done.returncode == 0, done.stderr
    made = clusters(stack, "fv", 6)
    steps = [made[:2], made[2:4], made[4:]]
    heads = {c: head(stack, c) for c in made}
    site = config(stack, made[0])["labels"]
    r = root.post("/v1/rollout", json={
        "name": "flux-up", "change": {"fluxVersion": "v2.7.5"},
        "selector": {"matchLabels": site}, "rollout": {"steps": [{"clusters": 2},
                                                                 {"clusters": "34%"}]}})
    assert r.status_code == 201, r.text
    ro = r.json()["uuid"]
    assert r.json()["kind"] == "cluster" and r.headers["Location"].endswith(ro)

    again = root.post("/v1/rollout", json={"name": "twice", "change": {
        "fluxVersion": "v2.7.5"}, "clusters": made[:1]})
    assert again.status_code == 409 and ro in again.json()["error"], again.text
    view = view_when(root, ro, "step 1 begun", lambda v: v["state"] == "Progressing")
    assert [s["clusters"] for s in view["steps"]] == steps
    commits = {c: new_commit(stack, c, heads[c]) for c in steps[0]}
    assert versions(stack, made) == dict.fromkeys(steps[0], "v2.7.5") | dict.fromkeys(
        made[2:], None)
    assert all(head(stack, c) == heads[c] for c in made[2:])  # their repos are untouched
    assert "path: ./v2.7.5" in bare(stack.repos / f"{steps[0][0]}.git", "show",
                                    "main:edo/cluster/flux-system.yaml")

    report(stack, steps[0][0], commits[steps[0][0]])
    report(stack, steps[0][1], heads[steps[0][1]])  # the old commit: not ready yet
    view = root.get(f"/v1/rollout/{ro}").json()
    assert view["step"] == 0 and versions(stack, steps[1]) == dict.fromkeys(steps[1], None)
    report(stack, steps[0][1], commits[steps[0][1]])
    view = view_when(root, ro, "step 2 begun", lambda v: v["step"] == 1)
    commits |= {c: new_commit(stack, c, heads[c]) for c in steps[1]}
    assert versions(stack, made[4:]) == dict.fromkeys(steps[2], None)

    # paused: step 2 ready holds step 3 back until resume
    r = root.post(f"/v1/rollout/{ro}/pause")
    assert r.status_code == 202 and r.json()["kind"] == "cluster", r.text
    view_when(root, ro, "paused", lambda v: v["state"] == "Paused")
    for cluster in steps[1]:
        report(stack, cluster, commits[cluster])
    assert root.post(f"/v1/rollout/{ro}/pause").status_code == 409
    view = root.get(f"/v1/rollout/{ro}").json()
    assert view["state"] == "Paused" and view["step"] == 1
    assert versions(stack, steps[2]) == dict.fromkeys(steps[2], None)
    assert root.post(f"/v1/rollout/{ro}/resume").status_code == 202
    view_when(root, ro, "step 3 begun", lambda v: v["step"] == 2)
    commits |= {c: new_commit(stack, c, heads[c]) for c in steps[2]}

    # a Degraded edge halts it, naming the cluster
    report(stack, steps[2][0], commits[steps[2][0]], degraded=True)
    view = view_when(root, ro, "halted", lambda v: v["state"] == "Halted")
    assert [f["cluster"] for f in view["failed"]] == [steps[2][0]]
    assert "failed" in view["failed"][0]["message"]

    # abort: nothing moves back, and the answer and the view say so
    r = root.post(f"/v1/rollout/{ro}/abort")
    assert r.status_code == 202 and "leaves every cluster as it is" in r.json()["message"]
    view = view_when(root, ro, "aborted", lambda v: v["state"] == "Aborted")
    assert "leaves every cluster as it is" in view["message"] and view["updated"] == made
    assert versions(stack, made) == dict.fromkeys(made, "v2.7.5")
    assert root.post(f"/v1/rollout/{ro}/resume").status_code == 409
    listed = root.get("/v1/rollout").json()["rollouts"]
    assert [(v["uuid"], v["kind"], v["state"]) for v in listed if v["uuid"] == ro] == [
        (ro, "cluster", "Aborted")]


def test_refusals_write_nothing(stack: Stack, root: Api) -> None:
    before = stack.admin.get(f"/v2/app/{ROLLOUT}/object").json()
    for body, field in [
            ({"name": "x", "change": {"fluxVersion": "2.7"}}, "change.fluxVersion"),
            ({"name": "x", "change": {"fluxVersion": "v2.7.5"},
              "rollout": {"steps": [{"clusters": "0%"}]}}, "rollout.steps[0].clusters"),
            ({"name": "x", "change": {"fluxVersion": "v2.7.5"},
              "clusters": [str(uuid.uuid4())]}, "clusters"),
            ({"name": "x", "change": {"fluxTemplate": {"a.yaml": []}}}, "change.fluxTemplate"),
            ({"name": "x", "change": {"fluxVersion": "v2.7.5"},
              "selector": {"matchLabels": {"nobody": "here"}}}, "selector")]:
        r = root.post("/v1/rollout", json=body)
        assert r.status_code == 422 and r.json()["error"].startswith(f"{field}:"), r.text
    assert root.post("/v1/rollout", data="[", headers={
        "Content-Type": "application/json"}).status_code == 400
    assert stack.admin.get(f"/v2/app/{ROLLOUT}/object").json() == before
    assert root.get(f"/v1/rollout/{uuid.uuid4()}").status_code == 404
    assert Api(stack.manager.url).post("/v1/rollout", json={}).status_code == 401


def test_a_template_rollout_commits_per_step_and_unpins_once_promoted(
        stack: Stack, root: Api) -> None:
    made = clusters(stack, "ft", 4)
    heads = {c: head(stack, c) for c in made}
    default = stack.admin.get(f"/v2/app/{TEMPLATE_APP}/object/{TEMPLATE_APP}").json()
    candidate = default | {"canary.yaml": [{"apiVersion": "v1", "kind": "ConfigMap",
                                            "metadata": {"name": "canary",
                                                         "namespace": "{{namespace}}"}}]}
    r = root.post("/v1/rollout", json={"name": "tpl", "change": {"fluxTemplate": candidate},
                                       "clusters": made,
                                       "rollout": {"steps": [{"clusters": 2}]}})
    assert r.status_code == 201, r.text
    ro = r.json()["uuid"]
    assert r.json()["change"] == {"fluxTemplate": ro}
    steps = [made[:2], made[2:]]
    commits = {c: new_commit(stack, c, heads[c]) for c in steps[0]}
    assert {c: config(stack, c).get("fluxTemplate") for c in made} == dict.fromkeys(
        steps[0], ro) | dict.fromkeys(steps[1], None)
    assert all(head(stack, c) == heads[c] for c in steps[1])
    assert "kind: ConfigMap" in bare(stack.repos / f"{steps[0][0]}.git", "show",
                                     "main:edo/cluster/canary.yaml")
    for cluster in steps[0]:
        report(stack, cluster, commits[cluster])
    commits |= {c: new_commit(stack, c, heads[c]) for c in steps[1]}
    for cluster in steps[1]:
        report(stack, cluster, commits[cluster])
    view = view_when(root, ro, "complete", lambda v: v["state"] == "Complete")
    assert view["promoted"] is False and "fplus rollout promote" in view["message"]
    assert all(config(stack, c).get("fluxTemplate") == ro for c in made)  # pins stay
    # the Cluster Manager may not write the default template: the operator promotes it
    assert stack.admin.get(f"/v2/app/{TEMPLATE_APP}/object/{TEMPLATE_APP}").json() == default
    r = stack.admin.put(f"/v2/app/{TEMPLATE_APP}/object/{TEMPLATE_APP}", json=candidate)
    assert r.status_code == 204, r.text
    wait_for(lambda: all("fluxTemplate" not in config(stack, c) for c in made),
             timeout=WAIT, what="the pins removed")
    assert view_when(root, ro, "promoted", lambda v: v.get("promoted"))["state"] == "Complete"
    for cluster in made:  # rendered again from the default: the same content, no new commit
        wait_for(lambda c=cluster: (status(stack.admin, c) or {}).get("observedEtag")
                 == stack.admin.get(f"/v2/app/{CONFIG}/object/{c}").headers.get(
                     "ETag", "").strip('"'), timeout=WAIT, what="unpinned rendered")
        assert head(stack, cluster) == commits[cluster]
