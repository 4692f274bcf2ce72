"""Gitea faults as the running service meets them: a token Gitea refuses, a token that may not
manage the organisation, an organisation someone else owns (each: one line at start, the
service does not run, nothing is made, the token is never printed); a repo name someone else
holds (the cluster is Failed naming the holder, the repo untouched); Gitea down when the
service starts (commissioning waits and completes once Gitea answers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fplus.git.hosts.gitea import reader_name
from harness.gitcli import push_from_clone
from harness.gitea import Gitea, serve, start_gitea, token_in
from harness.gitea_stack import GiteaStack, manager_process, start_gitea_stack
from harness.servers import ServiceProcess
from harness.stack import create_cluster, status, wait_for
from tests.gitea.hosts import Host

DEAD_STORE = "http://127.0.0.1:9"
"""No Config Store: a service refused at its Gitea check never gets to it."""


def refused_start(root: Path, gitea: Gitea, token: str, org: str) -> str:
    """Start a Cluster Manager that must exit at once; its log."""
    process = manager_process(root / "cm", DEAD_STORE, gitea, token, org=org, seed=False)
    with pytest.raises(RuntimeError, match="exited"):
        process.start()
    (log,) = root.glob("cluster_manager-*.log")
    text = log.read_text()
    assert token not in text
    return text


def org_exists(gitea: Gitea, org: str) -> bool:
    return gitea.api().get(f"{gitea.url}/api/v1/orgs/{org}", timeout=30).status_code == 200


def test_a_wrong_token_stops_the_service_at_start(gitea: Gitea, tmp_path: Path) -> None:
    log = refused_start(tmp_path, gitea, "0" * 40, "wrong-token-org")
    assert (f"cluster-manager: Gitea at {gitea.url} refused the token: invalid username, "
            "password or token") in log
    assert not org_exists(gitea, "wrong-token-org")


def test_a_token_without_organisation_scope_stops_the_service(
        gitea: Gitea, tmp_path: Path) -> None:
    token = token_in(gitea.cli("admin", "user", "generate-access-token", "--username",
                               gitea.admin, "--token-name", "no-org-scope", "--raw",
                               "--scopes", "write:admin,write:repository,read:user"))
    log = refused_start(tmp_path, gitea, token, "no-scope-org")
    assert "the token may not manage the Gitea organisation no-scope-org" in log
    assert "required=[read:organization]" in log
    assert not org_exists(gitea, "no-scope-org")


def test_an_organisation_the_token_does_not_own_stops_the_service(
        gitea: Gitea, tmp_path: Path) -> None:
    api, base = gitea.api(), f"{gitea.url}/api/v1"
    made = api.post(f"{base}/admin/users", timeout=30, json={
        "username": "someone", "email": "someone@example.invalid",
        "password": "someone-password", "must_change_password": False})
    assert made.status_code == 201, made.text
    org = api.post(f"{base}/admin/users/someone/orgs", json={"username": "someones"},
                   timeout=30)
    assert org.status_code == 201, org.text
    log = refused_start(tmp_path, gitea, gitea.token, "someones")
    assert (f"the token's Gitea user {gitea.admin} is not an owner of the organisation "
            "someones") in log
    repos = api.get(f"{base}/orgs/someones/repos", timeout=30).json()
    assert repos == []


@pytest.fixture(scope="module")
def faults(gitea: Gitea, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    stack = start_gitea_stack(tmp_path_factory.mktemp("faults"), gitea, org="faults-org")
    try:
        yield Host("gitea", stack)
    finally:
        stack.stop()


def test_a_repo_name_someone_else_holds_is_refused_naming_the_holder(
        faults: Host, tmp_path: Path) -> None:
    gitea, base = faults.gitea, f"{faults.gitea.url}/api/v1"
    made = gitea.api().post(f"{base}/orgs/faults-org/repos", timeout=30, json={
        "name": "taken-1", "private": True, "default_branch": "main",
        "description": "a person's repo"})
    assert made.status_code == 201, made.text
    theirs = push_from_clone(gitea.clone_url("faults-org", "taken-1"), tmp_path / "theirs",
                             "README.md", "not the Cluster Manager's\n")
    cluster = create_cluster(faults.admin, "taken-1")
    failed = wait_for(lambda: (s := status(faults.admin, cluster) or {}).get("phase")
                      == "Failed" and s, timeout=60, what="the refusal")
    assert ("the Gitea repo faults-org/taken-1 already exists and is held by faults-org, not "
            "made by the Cluster Manager; nothing was changed") in failed["error"]
    assert "flux" not in failed and "sync" not in failed  # no accounts made
    assert faults.head(cluster, "taken-1") == theirs
    assert faults.gitea_repo("taken-1")["description"] == "a person's repo"  # type: ignore[index]
    user = gitea.api().get(f"{base}/users/{reader_name(cluster)}", timeout=30)
    assert user.status_code == 404


def test_the_gitea_token_is_in_no_log_and_on_no_command_line(faults: Host) -> None:
    logs = "".join(p.read_text(errors="replace") for p in faults.stack.root.glob("*.log"))
    assert "Cluster Manager listening" in logs and faults.gitea.token not in logs
    pid = faults.stack.manager.proc.pid  # type: ignore[union-attr]
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    assert "--gitea-url" in argv and faults.gitea.token not in argv


def test_gitea_down_at_start_then_commissioning_completes_once_it_answers(
        tmp_path: Path) -> None:
    gitea = start_gitea(tmp_path / "gitea")
    stack: GiteaStack | None = None
    try:
        gitea.stop()
        stack = start_gitea_stack(tmp_path, gitea)  # warns, and serves
        cluster = create_cluster(stack.admin, "late-1")
        wait_for(lambda: any("failed (attempt" in line and "Gitea GET /user: no answer from"
                             in line for line in _log(stack.manager).splitlines()),
                 timeout=30, what="a commissioning attempt while Gitea is down")
        assert not (status(stack.admin, cluster) or {}).get("ready")
        gitea.process = serve(gitea.root, gitea.port, tmp_path / "gitea-again.log", 60)
        wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), timeout=90,
                 what="commissioning once Gitea answers")
        host = Host("gitea", stack)
        assert host.head(cluster, "late-1") == (status(stack.admin, cluster) or {})["commit"]
    finally:
        if stack is not None:
            stack.stop()
        gitea.stop()


def _log(process: ServiceProcess) -> str:
    return "".join(p.read_text(errors="replace")
                   for p in process.data_dir.parent.glob("cluster_manager-*.log"))
