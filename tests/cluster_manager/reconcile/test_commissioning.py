"""The step runners as a whole: what one ``reconcile(cluster)`` does, resumes and refuses."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from fplus.cluster_manager.model.apps_and_roles import STATUS_APP
from fplus.cluster_manager.model.name_claims import APP as CLAIM_APP
from fplus.cluster_manager.reconcile import accounts
from fplus.cluster_manager.reconcile import commissioning as steps
from fplus.cluster_manager.reconcile.job import Env, Job
from fplus.config_store import uuids
from fplus.git import bare
from fplus.git.repo import ChangeSet, WriteResult, writer_for
from fplus.git.repo import writer as writer_module
from fplus.git.repo._durable import SharedSync
from tests.cluster_manager.reconcile.conftest import GROUPS, configure
from tests.cluster_manager.reconcile.fakes import FakeConfigDB, FakeRepos, Injected

C1 = "11111111-1111-4111-8111-111111111111"
C2 = "22222222-2222-4222-8222-222222222222"
SPEC = {"name": "line-1", "namespace": "fplus-edge"}


def status(cs: FakeConfigDB, cluster: str = C1) -> dict:
    return cs.entries[(STATUS_APP, cluster)]


def test_a_new_entry_becomes_a_ready_cluster(env: Env, cs: FakeConfigDB,
                                             repos: FakeRepos) -> None:
    configure(env, {C1: SPEC})
    steps.reconcile(C1, env)
    st = status(cs)
    assert st["phase"] == "Ready" and st["ready"] is True and "error" not in st
    assert st["spec"] == SPEC and st["fluxVersion"] == "2.7.5"
    assert st["flux"]["done"] and st["sync"]["done"]
    assert st["commit"] == f"{1:040x}" and "edo/cluster/self-link.yaml" in repos.files[C1]
    assert st["observedEtag"] == cs.etags[(uuids.App.EdgeClusterConfiguration, C1)]
    assert cs.entries[(uuids.App.SparkplugAddress, C1)] == {"group_id": "ACS-line-1"}
    assert C1 in cs.members[GROUPS.cluster]


def test_commissioning_writes_status_twice_and_nothing_before_validation(
        env: Env, cs: FakeConfigDB) -> None:
    configure(env, {C1: SPEC})
    steps.reconcile(C1, env)
    assert cs.count("patch_config", STATUS_APP) == 2  # Provisioning, then Ready with progress
    writes = [(name, args[0]) for name, args in cs.calls
              if name in ("put_config", "patch_config", "create_principal", "add_member")]
    assert writes[:3] == [("put_config", uuids.App.EdgeClusterConfiguration),  # the test's
                          ("put_config", CLAIM_APP),  # one claim: its object made first
                          ("patch_config", STATUS_APP)]  # Provisioning, before any creation
    calls = [name for name, _ in cs.calls]
    claim = next(i for i, (name, args) in enumerate(cs.calls)
                 if name == "put_config" and args[0] == CLAIM_APP)
    assert calls[claim - 1] == "create_object"  # a new cluster's claim never meets a 404


def test_an_invalid_entry_is_recorded_as_failed_and_creates_nothing(
        env: Env, cs: FakeConfigDB, repos: FakeRepos) -> None:
    configure(env, {C1: {"name": "Not A Label", "namespace": "x"}})
    steps.reconcile(C1, env)
    st = status(cs)
    assert st["phase"] == "Failed" and st["ready"] is False and "DNS-1123" in st["error"]
    assert st["conditions"][0]["reason"] == "InvalidConfig"
    assert cs.principals == {} and repos.files == {}
    assert (uuids.App.SparkplugAddress, C1) not in cs.entries


def test_a_current_cluster_is_left_alone_unless_forced(env: Env, cs: FakeConfigDB,
                                                      repos: FakeRepos) -> None:
    configure(env, {C1: SPEC})
    steps.reconcile(C1, env)
    before, requests = len(cs.calls), cs.requests
    steps.reconcile(C1, env)
    assert cs.requests == requests + 1  # its status and name's claim, read, nothing else
    assert {name for name, _ in cs.calls[before:]} == {"batch", "get_config"}
    template = cs.entries[(uuids.App.FluxTemplate, uuids.App.FluxTemplate)]
    env.desired.replace_template(template | {"extra.yaml": [{"kind": "Extra"}]})
    steps.reconcile(C1, env, force=True)
    assert "edo/cluster/extra.yaml" in repos.files[C1] and repos.commits == 2


def test_the_ready_condition_keeps_its_transition_time_until_its_status_changes(
        env: Env, cs: FakeConfigDB) -> None:
    configure(env, {C1: SPEC})
    steps.reconcile(C1, env)
    cs.entries[(STATUS_APP, C1)]["conditions"][0]["lastTransitionTime"] = "2020-01-01T00:00:00Z"
    steps.reconcile(C1, env, force=True)
    assert status(cs)["conditions"][0]["lastTransitionTime"] == "2020-01-01T00:00:00Z"
    configure(env, {C1: SPEC | {"colour": "red"}})
    steps.reconcile(C1, env)
    (condition,) = status(cs)["conditions"]
    assert condition["status"] == "False"
    assert condition["lastTransitionTime"] != "2020-01-01T00:00:00Z"


def test_a_new_cluster_costs_three_requests_and_an_update_three(env: Env,
                                                                cs: FakeConfigDB) -> None:
    template = uuids.App.FluxTemplate
    env.desired.replace_template(cs.entries[(template, template)])  # as notify delivers it
    configure(env, {C1: SPEC})
    requests = cs.requests
    steps.reconcile(C1, env)
    assert cs.requests - requests == 3  # the look, the batch, the Ready record
    configure(env, {C1: SPEC | {"namespace": "other"}})
    requests = cs.requests
    steps.reconcile(C1, env)
    assert cs.requests - requests == 3 and status(cs)["spec"]["namespace"] == "other"


def test_a_name_the_cluster_api_claimed_for_it_is_kept_as_claimed(env: Env,
                                                                  cs: FakeConfigDB) -> None:
    assert env.claims.claim("line-1", C1, creator="someone") is None  # as the API creates it
    configure(env, {C1: SPEC})
    claims = cs.count("put_config", CLAIM_APP)
    steps.reconcile(C1, env)
    assert status(cs)["phase"] == "Ready"
    assert cs.count("put_config", CLAIM_APP) == claims  # the API's claim, not written again
    claim = next(v for (app, _), v in cs.entries.items() if app == CLAIM_APP)
    assert claim == {"cluster": C1, "name": "line-1", "creator": "someone"}


def test_a_batch_failing_midway_writes_nothing_and_the_retry_completes(
        env: Env, cs: FakeConfigDB, repos: FakeRepos) -> None:
    configure(env, {C1: SPEC})
    cs.fail("put_config", uuids.App.GitRepoConfig)  # after the claim, status and accounts
    with pytest.raises(Injected):
        steps.reconcile(C1, env)
    assert (STATUS_APP, C1) not in cs.entries and cs.principals == {} and cs.grants == {}
    assert env.claims.holder("line-1") is None and repos.files == {}
    assert [k for k in cs.entries if k[1] == C1] == [(uuids.App.EdgeClusterConfiguration, C1)]
    steps.reconcile(C1, env)
    assert status(cs)["phase"] == "Ready" and env.claims.holder("line-1") == C1


def test_a_crash_after_the_batch_records_progress_and_the_retry_resumes(
        env: Env, cs: FakeConfigDB, repos: FakeRepos) -> None:
    configure(env, {C1: SPEC})
    repos.fail_next = Injected("the Git server is down")
    with pytest.raises(Injected):
        steps.reconcile(C1, env)
    st = status(cs)
    assert st["phase"] == "Provisioning" and st["flux"]["done"] and st["sync"]["done"]
    steps.reconcile(C1, env)
    assert status(cs)["phase"] == "Ready"
    assert cs.count("create_principal") == 2  # once per role, not again on the retry


def test_a_name_claimed_after_the_look_ends_failed_with_nothing_created(
        env: Env, cs: FakeConfigDB, repos: FakeRepos, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(env, {C1: SPEC})
    look = steps.look

    def look_then_lose(job: Job, env: Env) -> None:
        look(job, env)
        assert env.claims.claim("line-1", C2) is None  # another cluster, meanwhile

    monkeypatch.setattr(steps, "look", look_then_lose)
    steps.reconcile(C1, env)
    st = status(cs)
    assert st["phase"] == "Failed" and C2 in st["error"] and "spec" not in st
    assert cs.principals == {} and repos.files == {} and C1 not in cs.members[GROUPS.cluster]
    assert (uuids.App.SparkplugAddress, C1) not in cs.entries
    assert (uuids.App.GitRepoConfig, C1) not in cs.entries
    assert env.claims.holder("line-1") == C2


def test_a_changed_entry_is_re_rendered(env: Env, cs: FakeConfigDB, repos: FakeRepos) -> None:
    configure(env, {C1: SPEC})
    steps.reconcile(C1, env)
    configure(env, {C1: SPEC | {"namespace": "other"}})
    steps.reconcile(C1, env)
    assert status(cs)["spec"]["namespace"] == "other" and repos.commits == 2


def test_a_refused_rename_keeps_the_accepted_spec_and_undoing_it_recovers(
        env: Env, cs: FakeConfigDB, repos: FakeRepos) -> None:
    configure(env, {C1: SPEC})
    steps.reconcile(C1, env)
    configure(env, {C1: SPEC | {"name": "line-2"}})
    steps.reconcile(C1, env)
    st = status(cs)
    assert st["phase"] == "Failed" and "cannot change" in st["error"]
    assert st["spec"] == SPEC and st["refused"]["spec"]["name"] == "line-2"
    assert set(cs.principals) == {"op1flux/line-1", "op1sync/line-1"}
    assert env.claims.holder("line-2") is None  # a refused rename claims nothing
    configure(env, {C1: SPEC})  # undo
    steps.reconcile(C1, env)
    st = status(cs)
    assert st["phase"] == "Ready" and "refused" not in st and "error" not in st
    assert cs.count("create_principal") == 2 and repos.commits == 1


def test_two_entries_with_one_name_commission_only_the_first(env: Env,
                                                             cs: FakeConfigDB) -> None:
    configure(env, {C1: SPEC, C2: SPEC})
    steps.reconcile(C1, env)
    steps.reconcile(C2, env)
    assert status(cs, C1)["phase"] == "Ready"
    assert status(cs, C2)["phase"] == "Failed" and C1 in status(cs, C2)["error"]
    assert "spec" not in status(cs, C2)  # never accepted
    assert status(cs, C2)["refused"]["spec"] == SPEC
    assert set(cs.principals) == {"op1flux/line-1", "op1sync/line-1"}  # the first one's


def test_a_removed_entry_is_decommissioned_without_leftovers(
        env: Env, cs: FakeConfigDB, repos: FakeRepos, forgotten: list[str]) -> None:
    configure(env, {C1: SPEC})
    steps.reconcile(C1, env)
    configure(env, {C1: None})
    steps.reconcile(C1, env)
    assert cs.principals == {} and cs.grants == {}
    assert [k for k in cs.entries if k[1] == C1] == []
    assert C1 not in cs.members[GROUPS.cluster]
    assert repos.archived == [C1] and forgotten == [C1]
    assert cs.calls[-2:] == [("delete_object", (C1,)), ("delete_config", (STATUS_APP, C1))]
    assert env.claims.holder("line-1") is None  # the name is free again


def test_decommissioning_resumes_after_a_crash(env: Env, cs: FakeConfigDB,
                                               repos: FakeRepos) -> None:
    configure(env, {C1: SPEC})
    steps.reconcile(C1, env)
    configure(env, {C1: None})
    cs.fail("delete_config", uuids.App.SparkplugAddress)  # in the batch revoking the accounts
    with pytest.raises(Injected):
        steps.reconcile(C1, env)
    st = status(cs)  # that batch wrote nothing: the accounts and their records stay
    assert st["phase"] == "Deleting" and st["flux"]["done"] and st["sync"]["done"]
    assert len(cs.principals) == 2 and env.claims.holder("line-1") == C1
    assert (uuids.App.SparkplugAddress, C1) in cs.entries and repos.archived == []
    steps.reconcile(C1, env)
    assert (STATUS_APP, C1) not in cs.entries and repos.archived == [C1]
    assert cs.principals == {} and env.claims.holder("line-1") is None


def test_decommissioning_costs_eight_requests(env: Env, cs: FakeConfigDB) -> None:
    configure(env, {C1: SPEC})
    steps.reconcile(C1, env)
    configure(env, {C1: None})
    requests = cs.requests
    steps.reconcile(C1, env)
    # the status; Deleting; the deployments' search; the teardown commit; the edge's status;
    # the look-up; the accounts, entries and claim; the object and status
    assert cs.requests - requests == 8


def test_a_cluster_without_entry_or_status_is_a_no_op(env: Env, cs: FakeConfigDB) -> None:
    configure(env, {})
    steps.reconcile(C1, env)
    assert [name for name, _ in cs.calls] == ["get_config"]


def test_a_cluster_commissioned_before_claims_claims_its_name_once(env: Env,
                                                                 cs: FakeConfigDB) -> None:
    configure(env, {C1: SPEC})
    steps.reconcile(C1, env)
    env.claims.release("line-1", C1)  # as a cluster from before claims existed
    cs.patch_config(STATUS_APP, C1, {"nameClaimed": None})
    steps.reconcile(C1, env)
    assert env.claims.holder("line-1") == C1 and status(cs)["nameClaimed"] is True
    before = len(cs.calls)
    steps.reconcile(C1, env)
    assert {name for name, _ in cs.calls[before:]} == {"batch", "get_config"}  # a look only


def test_a_cluster_commissioned_with_older_grants_is_granted_again_once(
        env: Env, cs: FakeConfigDB) -> None:
    configure(env, {C1: SPEC})
    steps.reconcile(C1, env)
    cs.patch_config(STATUS_APP, C1, {"sync": {"grants": None}})  # as before grant sets
    before = len(cs.calls)
    steps.reconcile(C1, env)
    assert status(cs)["sync"]["grants"] == status(cs)["flux"]["grants"] == accounts.GRANTS
    assert [name for name, _ in cs.calls[before:]].count("create_principal") == 1
    assert status(cs)["phase"] == "Ready"
    before = len(cs.calls)
    steps.reconcile(C1, env)
    assert {name for name, _ in cs.calls[before:]} == {"batch", "get_config"}  # a look only


class DiskRepos(FakeRepos):
    """Cluster repos as real bare repos under ``root``."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def write(self, cluster: str, changes: ChangeSet, message: str) -> WriteResult:
        return writer_for(self.root / f"{cluster}.git").apply(changes, message)


def test_a_cluster_is_ready_only_once_its_commit_is_on_disk(
        env: Env, cs: FakeConfigDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file-system sync before the ref moves fails: no ref, no ready; the retry commits
    and records the commit the branch is at."""
    failing = [OSError(5, "Input/output error")]

    def sync(fd: int) -> None:
        if failing:
            raise failing.pop()

    monkeypatch.setattr(writer_module, "shared_sync",
                        lambda path: SharedSync(os.open(path, os.O_RDONLY), sync))
    disk = DiskRepos(tmp_path / "repos")
    on_disk = dataclasses.replace(env, repos=disk)
    configure(on_disk, {C1: SPEC})
    with pytest.raises(OSError, match="Input/output"):
        steps.reconcile(C1, on_disk)
    st = status(cs)
    assert st["phase"] == "Provisioning" and st["ready"] is False and "commit" not in st
    repo = disk.root / f"{C1}.git"
    assert bare.read_ref(repo, "refs/heads/main") is None
    steps.reconcile(C1, on_disk)
    st = status(cs)
    assert st["ready"] is True and st["commit"] == bare.read_ref(repo, "refs/heads/main")
