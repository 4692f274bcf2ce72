"""The Cluster Manager end to end: real Config Store, Git server and git CLI."""

from __future__ import annotations

import json
import time
from pathlib import Path

import yaml

from fplus.config_store import uuids
from fplus.git.repo import list_files, read_file
from harness.gitcli import files_at
from harness.servers import Api
from harness.stack import (
    CONFIG,
    Stack,
    clone_url,
    create_cluster,
    git,
    status,
    wait_for,
)

MERGE = {"Content-Type": "application/merge-patch+json"}


def ready(stack: Stack, cluster: str, timeout: float = 30.0) -> dict:
    return wait_for(lambda: (s := status(stack.admin, cluster)) and s.get("ready") and s,
                    timeout, f"{cluster} ready")


def principal_with_password(admin: Api, principal: str, password: str) -> None:
    r = admin.put(f"/v2/principal/{principal}/password", json=password)
    assert r.status_code == 204, r.text


def test_entry_becomes_a_ready_cluster_with_its_repo(stack: Stack, tmp_path: Path) -> None:
    admin = stack.admin
    cluster = create_cluster(admin, "line-1")
    st = ready(stack, cluster)
    assert st["phase"] == "Ready" and st.get("error") is None and st["fluxVersion"] == "2.7.5"
    assert st["spec"] == {"name": "line-1", "namespace": "fplus-edge"}
    assert st["flux"]["done"] and st["sync"]["done"]
    docs = yaml.safe_load_all(st["self_link"])
    assert [d["kind"] for d in docs] == ["GitRepository", "Kustomization"]
    address = admin.get(f"/v2/app/{uuids.App.SparkplugAddress}/object/{cluster}").json()
    assert address == {"group_id": "ACS-line-1"}
    git_config = admin.get(f"/v2/app/{uuids.App.GitRepoConfig}/object/{cluster}").json()
    assert git_config == {"path": "cluster/line-1"}
    repo = stack.repos / f"{cluster}.git"
    files = list_files(repo)
    assert "README.md" in files and "edo/cluster/self-link.yaml" in files
    assert b"by-hand" in read_file(repo, "README.md")

    # the cluster's Flux principal can clone its repo, with the password bootstrap would set
    principal_with_password(admin, st["flux"]["uuid"], "flux-secret-1")
    url = clone_url(stack, "op1flux/line-1", "flux-secret-1", cluster)
    done = git("clone", "-q", url, str(tmp_path / "clone"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "clone/edo/cluster/self-link.yaml").exists()


def test_flux_credentials_reach_only_their_own_repo(stack: Stack, tmp_path: Path) -> None:
    admin = stack.admin
    mine, other = create_cluster(admin, "cell-a"), create_cluster(admin, "cell-b")
    flux_a = ready(stack, mine)["flux"]["uuid"]
    ready(stack, other)
    principal_with_password(admin, flux_a, "pw-a-123")
    refused = git("clone", "-q", clone_url(stack, "op1flux/cell-a", "pw-a-123", other),
                  str(tmp_path / "x"))
    assert refused.returncode != 0 and "403" in refused.stderr
    own = tmp_path / "own"
    assert git("clone", "-q", clone_url(stack, "op1flux/cell-a", "pw-a-123", mine),
               str(own)).returncode == 0
    (own / "by-hand").mkdir()
    (own / "by-hand/x.yaml").write_text("x: 1\n")
    git("add", ".", cwd=own)
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "x", cwd=own)
    push = git("push", "-q", "origin", "HEAD:main", cwd=own)
    assert push.returncode != 0 and "403" in push.stderr  # Pull only


def test_edge_sync_writes_only_its_own_status(stack: Stack) -> None:
    admin = stack.admin
    mine, other = create_cluster(admin, "sync-a"), create_cluster(admin, "sync-b")
    sync_a = ready(stack, mine)["sync"]["uuid"]
    ready(stack, other)
    principal_with_password(admin, sync_a, "sync-pw-1")
    edge = Api(stack.store.url, ("op1sync/sync-a", "sync-pw-1"))
    own = f"/v2/app/{uuids.App.EdgeClusterStatus}/object/{mine}"
    theirs = f"/v2/app/{uuids.App.EdgeClusterStatus}/object/{other}"
    host = {"hostname": "n1", "arch": "amd64", "k8s_version": "v1.31.0",
            "control_plane": True, "os_version": "Debian 12", "ready": True}
    body = json.dumps({"hosts": [host]})
    assert edge.patch(own, data=body, headers=MERGE).status_code == 204
    assert edge.patch(theirs, data=body, headers=MERGE).status_code == 403
    assert admin.get(theirs).status_code == 404


def test_invalid_entry_fails_clearly_and_recovers(stack: Stack) -> None:
    admin = stack.admin
    cluster = create_cluster(admin, "ok-name")  # schema forbids bad names at write time,
    ready(stack, cluster)  # so break a commissioned one through a missing chart instead
    r = admin.put(f"/v2/app/{CONFIG}/object/{cluster}",
                  json={"name": "ok-name", "namespace": "fplus-edge",
                        "chart": "0badc0de-0000-4000-8000-000000000000"})
    assert r.status_code == 204, r.text
    failed = wait_for(lambda: (s := status(admin, cluster)) and s["phase"] == "Failed" and s,
                      what="Failed phase")
    assert "unknown chart" in failed["error"] and failed["ready"] is False
    admin.put(f"/v2/app/{CONFIG}/object/{cluster}",
              json={"name": "ok-name", "namespace": "fplus-edge"})
    assert ready(stack, cluster).get("error") is None


def test_spec_change_rerenders_and_rename_is_refused(stack: Stack) -> None:
    admin = stack.admin
    cluster = create_cluster(admin, "moving")
    first = ready(stack, cluster)["commit"]
    admin.put(f"/v2/app/{CONFIG}/object/{cluster}", json={"name": "moving", "namespace": "other"})
    st = wait_for(lambda: (s := status(admin, cluster)) and s.get("commit") != first and s,
                  what="re-render")
    assert st["spec"]["namespace"] == "other" and st["ready"]
    link = next(yaml.safe_load_all(st["self_link"]))
    assert link["metadata"]["namespace"] == "other"
    admin.put(f"/v2/app/{CONFIG}/object/{cluster}", json={"name": "renamed", "namespace": "other"})
    failed = wait_for(lambda: (s := status(admin, cluster)) and s["phase"] == "Failed" and s,
                      what="rename refusal")
    assert "cannot change" in failed["error"]


def test_delete_leaves_nothing_behind(stack: Stack) -> None:
    admin = stack.admin
    cluster = create_cluster(admin, "short-lived")
    st = ready(stack, cluster)
    accounts = [st["flux"]["uuid"], st["sync"]["uuid"]]
    edge = f"/v2/app/{uuids.App.EdgeClusterStatus}/object/{cluster}"
    admin.put(edge, json={"hosts": []})
    deployment = admin.post("/v2/object", json={"class": uuids.Class.EdgeDeployment}).json()
    assert admin.put(f"/v2/app/{uuids.App.EdgeDeployment}/object/{deployment['uuid']}",
                     json={"name": "historian", "cluster": cluster, "chart": cluster}
                     ).status_code in (201, 204)
    assert admin.delete(f"/v2/app/{CONFIG}/object/{cluster}").status_code == 204
    # ordered teardown: the repo's teardown state first, the edge's access only once the
    # edge reports it applied that (here the test stands in for Edge Sync)
    teardown = wait_for(lambda: ((status(admin, cluster) or {}).get("teardown") or {})
                        .get("commit"), what="teardown commit")
    assert files_at(stack.repos / f"{cluster}.git") == [
        "README.md", "edo/cluster/edge-sync.yaml", "edo/cluster/self-link.yaml"]
    time.sleep(1)
    assert status(admin, cluster)["phase"] == "Deleting"
    for principal in accounts:  # still there: the edge has not pruned yet
        assert admin.get(f"/v2/object/{principal}").status_code == 200
    admin.put(edge, json={"hosts": [], "appliedCommit": teardown})
    wait_for(lambda: status(admin, cluster) is None, what="status removed")
    assert admin.get(f"/v2/object/{cluster}").status_code == 404  # the object went too
    assert admin.get(f"/v2/object/{deployment['uuid']}").status_code == 404  # its deployment
    for app in (uuids.App.SparkplugAddress, uuids.App.GitRepoConfig,
                uuids.App.EdgeClusterStatus):
        assert admin.get(f"/v2/app/{app}/object/{cluster}").status_code == 404
    for principal in accounts:
        assert admin.get(f"/v2/object/{principal}").status_code == 404
        assert admin.post("/v2/grant/find", json={"principal": principal}).json() == []
    for name in ("op1flux/short-lived", "op1sync/short-lived"):
        assert admin.get(f"/v2/identity/kerberos/{name}").status_code == 404
    stored = Api(stack.git.url, admin.auth).get("/v1/storage").json()
    assert cluster not in stored
    assert any(p.name.startswith(cluster) for p in (stack.root / "git/archive").iterdir())


def test_template_change_rerenders_every_cluster(stack: Stack) -> None:
    admin = stack.admin
    clusters = [create_cluster(admin, f"tpl-{i}") for i in range(3)]
    commits = {c: ready(stack, c)["commit"] for c in clusters}
    url = f"/v2/app/{uuids.App.FluxTemplate}/object/{uuids.App.FluxTemplate}"
    template = admin.get(url).json()
    template["extra.yaml"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "extra", "namespace": "{{namespace}}"},
                               "data": {"cluster": "{{uuid}}"}}]
    assert admin.put(url, json=template).status_code == 204
    for cluster in clusters:
        wait_for(lambda c=cluster: (status(admin, c) or {}).get("commit") != commits[c],
                 what="re-render after template change")
        text = read_file(stack.repos / f"{cluster}.git", "edo/cluster/extra.yaml")
        assert text and cluster.encode() in text
    del template["extra.yaml"]
    admin.put(url, json=template)


def _failed(stack: Stack, cluster: str) -> dict:
    return wait_for(lambda: (s := status(stack.admin, cluster)) and s["phase"] == "Failed" and s,
                    what=f"{cluster} Failed")


def test_bad_entry_creates_nothing_until_fixed(stack: Stack) -> None:
    admin = stack.admin
    cluster = create_cluster(admin, "unlucky", chart="0badc0de-0000-4000-8000-000000000000")
    failed = _failed(stack, cluster)
    assert "unknown chart" in failed["error"] and not failed.get("flux")
    assert not (stack.repos / f"{cluster}.git").exists()
    for app in (uuids.App.GitRepoConfig, uuids.App.SparkplugAddress):
        assert admin.get(f"/v2/app/{app}/object/{cluster}").status_code == 404
    assert admin.get("/v2/identity/kerberos/op1flux/unlucky").status_code == 404
    admin.put(f"/v2/app/{CONFIG}/object/{cluster}", json={"name": "unlucky", "namespace": "ns"})
    assert ready(stack, cluster)["phase"] == "Ready"


def test_schema_refuses_invalid_names_at_write_time(stack: Stack) -> None:
    admin = stack.admin
    cluster = admin.post("/v2/object", json={"class": uuids.Class.EdgeCluster}).json()["uuid"]
    for name in ("Shop_Floor", "../x", "a" * 64, ""):
        r = admin.put(f"/v2/app/{CONFIG}/object/{cluster}", json={"name": name, "namespace": "n"})
        assert r.status_code == 422, (name, r.text)
    assert status(admin, cluster) is None


def test_a_name_in_use_is_refused(stack: Stack) -> None:
    admin = stack.admin
    first = create_cluster(admin, "twin")
    ready(stack, first)
    second = create_cluster(admin, "twin")
    failed = _failed(stack, second)
    assert first in failed["error"] and not failed.get("flux")
    assert ready(stack, first)["flux"]["done"]  # the first one is untouched
