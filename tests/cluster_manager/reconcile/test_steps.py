"""Each commissioning and decommissioning step alone, against the in-memory Config Store."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from fplus.cluster_manager.changes.rendering import TemplateMissing
from fplus.cluster_manager.model.apps_and_roles import EDGE_APP, FLUX, STATUS_APP, SYNC
from fplus.cluster_manager.model.cluster_config import InvalidConfig
from fplus.cluster_manager.model.setup_status import SetupStatus
from fplus.cluster_manager.reconcile import accounts, teardown
from fplus.cluster_manager.reconcile import commissioning as steps
from fplus.cluster_manager.reconcile.job import Env, Job, send
from fplus.cluster_manager.reconcile.workqueue import RequeueAfter
from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreError
from fplus.git.repo import writer_for
from tests.cluster_manager.reconcile.conftest import CHART, GROUPS, configure
from tests.cluster_manager.reconcile.fakes import FakeConfigDB, FakeRepos

C1 = "11111111-1111-4111-8111-111111111111"
C2 = "22222222-2222-4222-8222-222222222222"
SPEC = {"name": "line-1", "namespace": "fplus-edge"}


def job(config: Any = None, status: dict[str, Any] | None = None) -> Job:
    """A job as validation leaves it (``spec`` is the entry when it is an object)."""
    config = dict(SPEC) if config is None else config
    spec = dict(config) if isinstance(config, dict) else {}
    return Job(C1, config, "etag-1", SetupStatus.parse(status), spec=spec)


def rendered(env: Env, config: dict[str, Any] | None = None) -> Job:
    j = job(config)
    steps.render(j, env)
    return j


# -- validate -------------------------------------------------------------------------------

def test_validate_accepts_a_new_name(env: Env) -> None:
    configure(env, {C1: SPEC})
    j = job()
    j.spec = {}
    steps.validate(j, env)
    assert j.spec == SPEC


@pytest.mark.parametrize(("config", "words"), [
    ({"name": "Line 1", "namespace": "x"}, "DNS-1123"),
    ({"name": "a", "namespace": "x", "colour": "red"}, "unknown keys"),
    ("not an object", "JSON object"),
])
def test_validate_refuses_bad_entries(env: Env, config: Any, words: str) -> None:
    with pytest.raises(InvalidConfig, match=words):
        steps.validate(job(config), env)


def test_validate_refuses_a_rename_once_accounts_exist(env: Env) -> None:
    status = {"spec": {"name": "old", "namespace": "n"}, "flux": {"uuid": C2, "done": True}}
    with pytest.raises(InvalidConfig, match=r"cannot change.*'old'"):
        steps.validate(job(status=status), env)
    steps.validate(job(status={"spec": {"name": "old", "namespace": "n"}}), env)  # no accounts


def test_claim_name_queues_a_free_names_claim_and_leaves_its_own_alone(
        env: Env, cs: FakeConfigDB) -> None:
    j = job()
    steps.claim_name(j, env)
    assert cs.requests == 0 and j.claim_at == 1  # queued in the batch, not written
    send(j, env)
    assert env.claims.holder("line-1") == C1
    # the claim object is made before its claim (idempotent), never after a 404
    assert [name for name, _ in cs.calls if name in ("create_object", "put_config")] == [
        "create_object", "put_config"]
    again = job()
    again.holder = C1  # as the look found it: ours already
    steps.claim_name(again, env)
    assert again.batch.ops == [] and again.claim_at is None


def test_claim_name_refuses_a_name_another_cluster_holds(env: Env) -> None:
    j = job()
    j.holder = C2
    with pytest.raises(InvalidConfig, match=f"used by cluster {C2}"):
        steps.claim_name(j, env)
    assert j.batch.ops == []


def test_write_config_refuses_a_name_claimed_since_the_look_and_writes_nothing(
        env: Env, cs: FakeConfigDB) -> None:
    j = job()
    steps.claim_name(j, env)
    steps.sparkplug_address(j, env)
    assert env.claims.claim("line-1", C2) is None  # another cluster, meanwhile
    with pytest.raises(steps.NameTaken, match=f"used by cluster {C2}"):
        steps.write_config(j, env)
    assert (uuids.App.SparkplugAddress, C1) not in cs.entries
    assert env.claims.holder("line-1") == C2


# -- render ---------------------------------------------------------------------------------

def test_render_writes_the_flux_template_files_and_the_self_link(env: Env) -> None:
    j = rendered(env)
    assert j.content is not None
    assert "edo/cluster/self-link.yaml" in j.content.files
    kinds = [d["kind"] for d in yaml.safe_load_all(j.content.self_link)]
    assert kinds == ["GitRepository", "Kustomization"]
    assert f"http://git.test/uuid/{C1}" in j.content.self_link


def test_render_with_a_chart_renders_its_helm_release(env: Env) -> None:
    j = rendered(env, SPEC | {"chart": CHART, "values": {"x": 1}})
    release = yaml.safe_load(j.content.files["edo/cluster/edge-cluster.yaml"])
    assert release["kind"] == "HelmRelease"
    assert release["metadata"] == {"name": f"edge-cluster-{C1}", "namespace": "fplus-edge",
                                   "labels": {"factoryplus.app.amrc.co.uk/uuid": C1}}
    assert release["spec"]["values"] == {"cluster": {"name": "line-1", "uuid": C1}, "x": 1}


def test_chart_values_merge_deeply_as_acs_does(env: Env, cs: FakeConfigDB) -> None:
    """RFC 7386 like ACS: objects merge key by key, null removes, other values replace
    (a shallow merge would lose cluster.name and cluster.uuid here)."""
    chart = cs.entries[(uuids.App.HelmChartTemplate, CHART)]
    chart["values"] |= {"krb5": {"realm": "FACTORY.EXAMPLE"}, "replicas": 1,
                        "debug": {"level": 2}}
    values = {"cluster": {"x": 1}, "replicas": [3], "debug": None, "new": {"a": None}}
    j = rendered(env, SPEC | {"chart": CHART, "values": values})
    release = yaml.safe_load(j.content.files["edo/cluster/edge-cluster.yaml"])
    assert release["spec"]["values"] == {
        "cluster": {"name": "line-1", "uuid": C1, "x": 1},
        "krb5": {"realm": "FACTORY.EXAMPLE"}, "replicas": [3], "new": {}}
    assert chart["values"]["debug"] == {"level": 2}  # the template entry is left as it was


@pytest.mark.parametrize(("extra", "files"), [
    ({}, ["edge-sync.yaml", "helm-charts.yaml", "sealed-secrets-upstream.yaml",
          "sealed-secrets.yaml", "self-link.yaml"]),
    ({"bare": True}, ["self-link.yaml"]),
    ({"sealedSecrets": False}, ["edge-sync.yaml", "helm-charts.yaml", "self-link.yaml"]),
    ({"chart": CHART}, ["edge-cluster.yaml", "edge-sync.yaml", "helm-charts.yaml",
                        "sealed-secrets-upstream.yaml", "sealed-secrets.yaml",
                        "self-link.yaml"]),
])
def test_render_writes_what_the_cluster_kind_gets(env: Env, extra: dict[str, Any],
                                                 files: list[str]) -> None:
    j = rendered(env, SPEC | extra)
    assert sorted(j.content.files) == ["README.md", *(f"edo/cluster/{f}" for f in files)]
    assert "kind: Kustomization" in j.content.self_link


def test_air_gapped_sealed_secrets_come_from_the_imported_chart(env: Env,
                                                               repos: FakeRepos) -> None:
    gapped = dataclasses.replace(env, settings=dataclasses.replace(env.settings,
                                                                    air_gapped=True))
    with pytest.raises(TemplateMissing, match=r"import-chart sealed-secrets-<version>\.tgz"):
        rendered(gapped)
    assert rendered(gapped, SPEC | {"sealedSecrets": False}).content  # no chart needed
    repos.files[uuids.Shared.HelmChartsRepo] = {"sealed-secrets/Chart.yaml": b"name: x\n"}
    files = rendered(gapped).content.files
    assert "edo/cluster/sealed-secrets-upstream.yaml" not in files
    # no upstream chart repository (bitnami.com, the SealedSecret API group, may be named)
    assert not re.search(r"https?://[^\s\"']*bitnami", "".join(files.values()))
    release = next(d for d in yaml.safe_load_all(files["edo/cluster/sealed-secrets.yaml"])
                   if d and d["kind"] == "HelmRelease")
    assert release["spec"]["chart"]["spec"]["sourceRef"] == {"kind": "GitRepository",
                                                             "name": "helm-charts"}


def test_flux_from_the_centre_needs_the_version_imported_and_follows_it(
        env: Env, repos: FakeRepos) -> None:
    with pytest.raises(TemplateMissing, match=r"Flux v2\.7\.5 is not in the central Flux repo"):
        rendered(env, SPEC | {"fluxVersion": "v2.7.5"})
    flux_repo = repos.files.setdefault(uuids.Shared.FluxSystemRepo, {})
    for version in ("v2.7.5", "v2.8.0"):
        flux_repo[f"{version}/gotk-components.yaml"] = b"kind: Namespace\n"
        files = rendered(env, SPEC | {"fluxVersion": version}).content.files
        kustomization = next(d for d in yaml.safe_load_all(files["edo/cluster/flux-system.yaml"])
                             if d and d["kind"] == "Kustomization")
        assert kustomization["spec"]["path"] == f"./{version}"  # an upgrade is a commit
    assert "edo/cluster/flux-system.yaml" not in rendered(env).content.files  # none named


def test_render_refuses_an_unknown_chart(env: Env) -> None:
    with pytest.raises(TemplateMissing, match="unknown chart"):
        rendered(env, SPEC | {"chart": C2})


def test_render_refuses_when_no_flux_template_exists(env: Env, cs: FakeConfigDB) -> None:
    cs.delete_config(uuids.App.FluxTemplate, uuids.App.FluxTemplate)
    with pytest.raises(TemplateMissing, match="no Flux template"):
        rendered(env)


def test_render_uses_the_delivered_template_without_reading_it(env: Env,
                                                              cs: FakeConfigDB) -> None:
    env.desired.replace_template({"self-link.yaml": [{"kind": "Delivered"}]})
    j = rendered(env)
    assert "Delivered" in j.content.self_link
    assert cs.count("get_config", uuids.App.FluxTemplate) == 0


# -- the work -------------------------------------------------------------------------------

def test_sparkplug_address_is_organisation_dash_name(env: Env, cs: FakeConfigDB) -> None:
    j = job()
    assert steps.sparkplug_address(j, env) is None
    assert (uuids.App.SparkplugAddress, C1) not in cs.entries  # queued
    assert send(j, env) == {}
    assert cs.entries[(uuids.App.SparkplugAddress, C1)] == {"group_id": "ACS-line-1"}


def test_accounts_creates_each_role_with_its_grants_and_group(env: Env,
                                                              cs: FakeConfigDB) -> None:
    j = job()
    assert steps.accounts(j, env) is None and cs.principals == {}  # queued
    patch = send(j, env)
    flux, sync = cs.principals["op1flux/line-1"], cs.principals["op1sync/line-1"]
    done = {"done": True, "grants": accounts.GRANTS}
    assert patch == {"flux": {"uuid": flux, **done}, "sync": {"uuid": sync, **done}}
    assert flux in cs.members[GROUPS.flux] and sync in cs.members[GROUPS.sync]
    grants = {(g["principal"], g["permission"], g["target"], g.get("object"))
              for g in cs.grants.values()}
    assert grants == {(flux, uuids.GitPerm.Pull, C1, None),
                      (sync, uuids.ConfigDBPerm.ReadApp, EDGE_APP, C1),
                      (sync, uuids.ConfigDBPerm.WriteApp, EDGE_APP, C1),
                      (sync, uuids.ConfigDBPerm.ReadApp, uuids.App.EdgeDeployment, C1)}


def test_accounts_skips_roles_already_done(env: Env, cs: FakeConfigDB) -> None:
    j = job(status={"flux": {"uuid": C2, "done": True, "grants": accounts.GRANTS}})
    steps.accounts(j, env)
    assert list(send(j, env)) == ["sync"]
    assert cs.count("create_principal") == 1


def test_accounts_grants_again_a_role_done_with_an_older_grant_set(env: Env,
                                                                   cs: FakeConfigDB) -> None:
    j = job(status={"flux": {"uuid": C2, "done": True, "grants": accounts.GRANTS},
                    "sync": {"uuid": C2, "done": True}})  # commissioned before grant sets
    steps.accounts(j, env)
    assert send(j, env)["sync"]["grants"] == accounts.GRANTS
    sync = cs.principals["op1sync/line-1"]
    assert {(g["target"], g.get("object")) for g in cs.grants.values()
            if g["principal"] == sync and g["permission"] == uuids.ConfigDBPerm.ReadApp} == {
        (EDGE_APP, C1), (uuids.App.EdgeDeployment, C1)}


def test_git_config_names_the_repo_and_groups_it(env: Env, cs: FakeConfigDB) -> None:
    j = job()
    assert steps.git_config(j, env) is None
    send(j, env)
    assert cs.entries[(uuids.App.GitRepoConfig, C1)] == {"path": "cluster/line-1"}
    assert C1 in cs.members[GROUPS.cluster]


def test_repository_commits_the_rendered_files(env: Env, repos: FakeRepos) -> None:
    j = rendered(env)
    steps.repository(j, env)
    assert j.commit is not None and repos.commits == 1
    assert set(repos.files[C1]) == set(j.content.files)


def test_repository_into_a_real_bare_repo(env: Env, tmp_path: Path) -> None:
    class LocalRepos:
        def write(self, cluster: str, changes: Any, message: str) -> Any:
            return writer_for(tmp_path / f"{cluster}.git").apply(changes, message)

    j = rendered(env)
    local = Env(env.cs, env.settings, env.groups, LocalRepos(), env.desired,  # type: ignore[arg-type]
                env.claims)
    steps.repository(j, local)
    again = rendered(env)
    steps.repository(again, local)
    assert j.commit is not None and again.commit == j.commit  # unchanged: no new commit


def test_the_first_commit_says_it_commissions_the_cluster(env: Env, tmp_path: Path) -> None:
    """A repo's first commit names what it is; a later change of configuration does not
    claim to commission it again."""
    messages: list[str] = []

    class Recording:
        def write(self, cluster: str, changes: Any, message: str) -> Any:
            messages.append(message)
            return writer_for(tmp_path / f"{cluster}.git").apply(changes, message)

    local = Env(env.cs, env.settings, env.groups, Recording(), env.desired,  # type: ignore[arg-type]
                env.claims)
    first = rendered(env)
    steps.repository(first, local)
    later = job(status={"ready": True, "commit": first.commit})
    steps.render(later, env)
    steps.repository(later, local)
    assert messages[0] == "Commission cluster line-1"
    assert messages[1] != messages[0]


def test_ready_records_commit_self_link_and_condition(env: Env) -> None:
    j = rendered(env)
    j.commit = "c" * 40
    patch = steps.ready(j, env)
    assert patch["ready"] is True and patch["phase"] == "Ready" and patch["commit"] == j.commit
    assert patch["self_link"] == j.content.self_link and patch["observedEtag"] == "etag-1"
    (condition,) = patch["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == \
        ("Ready", "True", "Commissioned")


# -- decommissioning, step by step ----------------------------------------------------------

def commissioned(env: Env, cs: FakeConfigDB) -> Job:
    configure(env, {C1: SPEC})
    steps.reconcile(C1, env)
    configure(env, {C1: None})
    return Job(C1, None, None, SetupStatus.parse(cs.entries[(STATUS_APP, C1)]))


def test_mark_deleting(env: Env, cs: FakeConfigDB) -> None:
    j = commissioned(env, cs)
    teardown.mark_deleting(j, env)
    assert cs.entries[(STATUS_APP, C1)]["phase"] == "Deleting"
    assert j.status.phase == "Deleting"


def test_remove_deployments_removes_every_deployment_of_the_cluster(
        env: Env, cs: FakeConfigDB) -> None:
    j = commissioned(env, cs)
    mine = [cs.create_object(uuids.Class.EdgeDeployment) for _ in range(2)]
    other = cs.create_object(uuids.Class.EdgeDeployment)
    cs.put_config(uuids.App.EdgeDeployment, mine[0], {"name": "a", "cluster": C1, "chart": C1})
    cs.put_config(uuids.App.EdgeDeployment, mine[1], {"name": "b", "cluster": C1})  # malformed
    cs.put_config(uuids.App.EdgeDeployment, other, {"name": "a", "cluster": "elsewhere"})
    teardown.remove_deployments(j, env)
    assert cs.list_app_objects(uuids.App.EdgeDeployment) == [other]
    assert not set(mine) & cs.objects and other in cs.objects


def test_revoke_accounts_removes_recorded_principals_and_their_records(
        env: Env, cs: FakeConfigDB) -> None:
    j = commissioned(env, cs)
    teardown.look_up(j, env)
    teardown.revoke_accounts(j, env)
    assert len(cs.principals) == 2  # queued
    teardown.write(j, env)
    assert cs.principals == {} and cs.grants == {}
    assert "flux" not in cs.entries[(STATUS_APP, C1)] and "sync" not in j.status.entry


def test_revoke_accounts_takes_a_recorded_one_gone_from_its_name_as_removed(
        env: Env, cs: FakeConfigDB) -> None:
    j = commissioned(env, cs)
    flux = cs.principals["op1flux/line-1"]
    cs.delete_principal(flux)  # a killed run removed it but not its record
    cs.objects.discard(flux)
    teardown.look_up(j, env)
    assert j.named == {"flux": None, "sync": cs.principals["op1sync/line-1"]}
    teardown.revoke_accounts(j, env)
    sync = cs.principals["op1sync/line-1"]
    for op in j.batch.ops:  # no Edge account any more: deleting it is refused, with 403
        if op.method == "DELETE" and op.path in (f"/v2/object/{flux}",
                                                  f"/v2/principal/{flux}"):
            assert 403 in op.accept
        if op.method == "DELETE" and op.path in (f"/v2/object/{sync}",
                                                  f"/v2/principal/{sync}"):
            assert 403 not in op.accept  # still under its name: a refusal is a real problem
    assert sum(op.path.endswith((flux, sync)) for op in j.batch.ops) == 4


def test_revoke_accounts_finds_one_a_crash_left_unrecorded(env: Env, cs: FakeConfigDB) -> None:
    j = commissioned(env, cs)
    cs.patch_config(STATUS_APP, C1, {"sync": None})  # created, but the record was lost
    j.status = SetupStatus.parse(cs.entries[(STATUS_APP, C1)])
    teardown.look_up(j, env)
    teardown.revoke_accounts(j, env)
    teardown.write(j, env)
    assert "op1sync/line-1" not in cs.principals


def test_revoke_accounts_leaves_a_namesake_serving_another_cluster(
        env: Env, cs: FakeConfigDB) -> None:
    j = commissioned(env, cs)
    cs.patch_config(STATUS_APP, C1, {"sync": None})
    cs.delete_principal(cs.principals["op1sync/line-1"])
    other = cs.create_principal("op1sync/line-1", grants=[{"permission": "p", "target": C2}])
    j.status = SetupStatus.parse(cs.entries[(STATUS_APP, C1)])
    teardown.look_up(j, env)
    teardown.revoke_accounts(j, env)
    teardown.write(j, env)
    assert cs.principals == {"op1sync/line-1": other}


def test_remove_entries(env: Env, cs: FakeConfigDB) -> None:
    j = commissioned(env, cs)
    cs.put_config(EDGE_APP, C1, {"hosts": []})
    teardown.remove_entries(j, env)
    teardown.write(j, env)
    for app in (uuids.App.GitRepoConfig, uuids.App.SparkplugAddress, EDGE_APP):
        assert (app, C1) not in cs.entries
    assert C1 not in cs.members[GROUPS.cluster]


def test_archive_repo_and_forget_tokens(env: Env, cs: FakeConfigDB, repos: FakeRepos,
                                       forgotten: list[str]) -> None:
    j = commissioned(env, cs)
    teardown.archive_repo(j, env)
    teardown.forget_tokens(j, env)
    assert repos.archived == [C1] and forgotten == [C1]


def test_remove_cluster_deletes_the_object_and_its_status(env: Env, cs: FakeConfigDB) -> None:
    j = commissioned(env, cs)
    teardown.remove_cluster(j, env)
    assert (STATUS_APP, C1) not in cs.entries and cs.count("delete_object", C1) == 1


def test_remove_cluster_keeps_an_object_in_use_but_drops_the_status(
        env: Env, cs: FakeConfigDB) -> None:
    j = commissioned(env, cs)
    cs.blocked.add(C1)
    teardown.remove_cluster(j, env)
    assert (STATUS_APP, C1) not in cs.entries


def test_release_name_frees_only_this_clusters_claim(env: Env, cs: FakeConfigDB) -> None:
    j = commissioned(env, cs)
    teardown.look_up(j, env)
    teardown.release_name(j, env)
    teardown.write(j, env)
    assert env.claims.holder("line-1") is None
    env.claims.claim("line-1", C2)
    teardown.look_up(j, env)
    teardown.release_name(j, env)
    assert j.batch.ops == []  # not ours
    env.claims.release("line-1", C2)
    env.claims.claim("line-1", C1)
    teardown.look_up(j, env)
    env.claims.release("line-1", C1)
    env.claims.claim("line-1", C2)  # taken over since the look
    teardown.release_name(j, env)
    teardown.write(j, env)
    assert env.claims.holder("line-1") == C2


def test_teardown_commit_keeps_only_the_self_link_and_edge_sync(
        env: Env, cs: FakeConfigDB, repos: FakeRepos) -> None:
    j = commissioned(env, cs)
    repos.files[C1]["by-hand/x.yaml"] = b"x"
    repos.files[C1]["edo/secrets/ns/db.yaml"] = b"x"
    assert "edo/cluster/sealed-secrets.yaml" in repos.files[C1]
    teardown.teardown_commit(j, env)
    assert set(repos.files[C1]) == {"README.md", "edo/cluster/self-link.yaml",
                                    "edo/cluster/edge-sync.yaml"}
    assert cs.entries[(STATUS_APP, C1)]["teardown"]["commit"] == j.status.teardown["commit"]
    teardown.teardown_commit(j, env)  # once
    assert repos.commits == 2


def test_await_edge_waits_for_the_edge_to_apply_the_teardown_commit(
        env: Env, cs: FakeConfigDB) -> None:
    j = commissioned(env, cs)
    teardown.mark_deleting(j, env)
    teardown.teardown_commit(j, env)
    cs.put_config(EDGE_APP, C1, {"lastSeen": "2026-01-01T00:00:00Z"})
    with pytest.raises(RequeueAfter):
        teardown.await_edge(j, env)
    cs.put_config(EDGE_APP, C1, {"appliedCommit": j.status.teardown["commit"]})
    teardown.await_edge(j, env)
    teardown.write(j, env)  # recorded with the next batch
    assert j.status.teardown["applied"] is True
    assert cs.entries[(STATUS_APP, C1)]["teardown"]["applied"] is True


@pytest.mark.parametrize("case", ["never reported", "forced", "timed out"])
def test_await_edge_goes_on_without_the_edge(env: Env, cs: FakeConfigDB, case: str) -> None:
    j = commissioned(env, cs)
    teardown.mark_deleting(j, env)
    teardown.teardown_commit(j, env)
    if case != "never reported":
        cs.put_config(EDGE_APP, C1, {"lastSeen": "2026-01-01T00:00:00Z"})
    if case == "forced":
        j.request = {"forceDelete": True}
    if case == "timed out":
        cs.patch_config(STATUS_APP, C1, {"teardown": {"started": "2000-01-01T00:00:00Z"}})
        j.status = SetupStatus.parse(cs.entries[(STATUS_APP, C1)])
    teardown.await_edge(j, env)  # no requeue


def test_roles_are_flux_then_sync() -> None:
    assert (FLUX.key, SYNC.key) == ("flux", "sync")


def test_await_edge_takes_an_edge_status_the_store_cannot_serve_as_not_applied_yet(
        env: Env, cs: FakeConfigDB) -> None:
    """A poisoned edge status entry (the Config Store answers 5xx for it) neither fails the
    step forever nor skips the wait: it waits, and the teardown timeout still ends it."""
    j = commissioned(env, cs)
    teardown.mark_deleting(j, env)
    teardown.teardown_commit(j, env)
    cs.fail("get_config", EDGE_APP, C1, error=ConfigStoreError(500, None, "cannot"))
    with pytest.raises(RequeueAfter):
        teardown.await_edge(j, env)
    cs.patch_config(STATUS_APP, C1, {"teardown": {"started": "2000-01-01T00:00:00Z"}})
    j.status = SetupStatus.parse(cs.entries[(STATUS_APP, C1)])
    cs.fail("get_config", EDGE_APP, C1, error=ConfigStoreError(500, None, "cannot"))
    teardown.await_edge(j, env)  # timed out: no requeue
