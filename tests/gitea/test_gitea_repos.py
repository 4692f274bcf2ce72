""":class:`GiteaRepos` in this process against the real Gitea: Gitea going away at each call
of a commissioning step (the step fails; its retry completes it, or the teardown removes
what it made), ``--gitea-teardown delete``, and Flux's token rotation (an older token stays
for the grace period, and goes once its successor is used)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from fplus.cluster_manager.model.settings import SHARED_REPO_NAMES, Settings
from fplus.git.hosts.gitea import GiteaRepos, marker, reader_name
from fplus.git.hosts.gitea_api import GiteaClient, GiteaError
from fplus.git.hosts.host import GITEA
from fplus.git.repo import ChangeSet
from harness.gitea import Gitea
from tests.gitea.hosts import run_git

ORG = "repos-org"


class GoesAway(requests.Session):
    """A session to the real Gitea that fails (as if Gitea went down) at call ``fail_at``."""

    def __init__(self, fail_at: int | None = None) -> None:
        super().__init__()
        self.fail_at, self.calls = fail_at, 0

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        self.calls += 1
        if self.calls == self.fail_at:
            raise requests.ConnectionError("Gitea went away")
        return super().request(*args, **kwargs)


def repos_on(gitea: Gitea, tmp_path: Path, session: requests.Session | None = None,
             names: dict[str, str] | None = None, org: str = ORG,
             **settings: Any) -> GiteaRepos:
    """GiteaRepos on the real Gitea; ``names``: the clusters' recorded names."""
    config = Settings(config_store_url="http://127.0.0.1:9", git_url="http://127.0.0.1:9",
                      data_dir=tmp_path, git_provider=GITEA, gitea_url=gitea.url,
                      gitea_org=org, **settings)
    client = GiteaClient(gitea.url, gitea.token, session=session)
    return GiteaRepos(config.git_host, client, gitea.token, (names or {}).get)


def state(gitea: Gitea, cluster: str, name: str) -> dict[str, Any]:
    """What Gitea holds for the cluster: its repo's description, Flux's user and its
    permission on the cluster's repo and the shared ones."""
    api, base = gitea.api(), f"{gitea.url}/api/v1"
    repo = api.get(f"{base}/repos/{ORG}/{name}", timeout=30)
    user = api.get(f"{base}/users/{reader_name(cluster)}", timeout=30)
    perms = {}
    if user.status_code == 200:
        for repo_name in (name, *SHARED_REPO_NAMES.values()):
            got = api.get(f"{base}/repos/{ORG}/{repo_name}/collaborators/"
                          f"{reader_name(cluster)}/permission", timeout=30)
            perms[repo_name] = got.json().get("permission") if got.ok else got.status_code
    here = repo.ok and repo.json()["name"] == name  # not a redirect to an archived one
    return {"repo": repo.json()["description"] if here else 404,
            "user": user.json()["full_name"] if user.ok else user.status_code,
            "restricted": user.json().get("restricted") if user.ok else None,
            "perms": perms}


def complete(cluster: str, name: str) -> dict[str, Any]:
    return {"repo": marker(cluster), "user": marker(cluster), "restricted": True,
            "perms": dict.fromkeys((name, *SHARED_REPO_NAMES.values()), "read")}


def calls_of(action: Callable[[GiteaRepos], None], gitea: Gitea, tmp_path: Path) -> int:
    session = GoesAway()
    action(repos_on(gitea, tmp_path, session))
    return session.calls


def test_gitea_going_away_at_any_call_of_create_is_mended_by_the_retry_or_the_teardown(
        gitea: Gitea, tmp_path: Path) -> None:
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    calls_of(lambda r: r.create(first, "mid-0"), gitea, tmp_path)  # the shared repos too
    assert state(gitea, first, "mid-0") == complete(first, "mid-0")
    total = calls_of(lambda r: r.create(second, "mid-1"), gitea, tmp_path)
    assert state(gitea, second, "mid-1") == complete(second, "mid-1")
    assert total >= 8
    for fail_at in range(3, total + 1):  # 1-2: the organisation check, made once a process
        cluster, name = str(uuid.uuid4()), f"mid-{fail_at}"
        broken = repos_on(gitea, tmp_path, GoesAway(fail_at))
        with pytest.raises(GiteaError, match="no answer"):
            broken.create(cluster, name)
        if fail_at % 2:  # the step's retry completes it
            repos_on(gitea, tmp_path).create(cluster, name)
            assert state(gitea, cluster, name) == complete(cluster, name), fail_at
        else:  # the cluster went meanwhile: the teardown removes what was made
            healthy = repos_on(gitea, tmp_path, names={cluster: name})
            healthy.revoke_reader(cluster)
            healthy.archive(cluster)
            left = state(gitea, cluster, name)
            assert (left["repo"], left["user"]) == (404, 404), fail_at


def test_teardown_delete_removes_the_repo(gitea: Gitea, tmp_path: Path) -> None:
    repos = repos_on(gitea, tmp_path, gitea_teardown="delete")
    cluster = str(uuid.uuid4())
    repos.create(cluster, "deleted-1")
    repos.write(cluster, ChangeSet(writes={"README.md": "x\n"}), "first")
    repos.revoke_reader(cluster)
    repos.archive(cluster)
    listed = gitea.api().get(f"{gitea.url}/api/v1/orgs/{ORG}/repos", timeout=30).json()
    assert not [r["name"] for r in listed if r["name"].startswith("deleted-1")]


def test_an_older_flux_token_stays_for_the_grace_period_and_goes_once_its_successor_is_used(
        gitea: Gitea, tmp_path: Path) -> None:
    repos = repos_on(gitea, tmp_path, rotation_grace=3600.0)
    cluster = str(uuid.uuid4())
    repos.create(cluster, "tokens-1")
    repos.write(cluster, ChangeSet(writes={"README.md": "x\n"}), "first")

    def pulls(token: str) -> bool:
        url = gitea.clone_url(ORG, "tokens-1", reader_name(cluster), token)
        return run_git("ls-remote", url, "refs/heads/main").returncode == 0

    first = repos.mint_reader(cluster)[1]
    second = repos.mint_reader(cluster)[1]
    time.sleep(1.05 - time.time() % 1)  # Gitea counts a token used in a later second only
    assert pulls(first) and pulls(second)  # the first within its grace; the second used
    third = repos.mint_reader(cluster)[1]
    assert not pulls(first)  # its successor was used
    assert pulls(second) and pulls(third)
    assert not pulls(gitea.token[:-4] + "0000")


def test_a_write_to_a_shared_repo_before_the_leader_made_it_makes_it(
        gitea: Gitea, tmp_path: Path) -> None:
    charts = next(iter(SHARED_REPO_NAMES))
    written = repos_on(gitea, tmp_path, org="early-import-org").write(
        charts, ChangeSet(writes={"chart/Chart.yaml": "name: chart\n"}), "Import chart")
    repo = gitea.api().get(f"{gitea.url}/api/v1/repos/early-import-org/"
                           f"{SHARED_REPO_NAMES[charts]}", timeout=30).json()
    assert repo["description"] == marker(charts, SHARED_REPO_NAMES) and repo["private"] is True
    url = gitea.clone_url("early-import-org", SHARED_REPO_NAMES[charts])
    assert run_git("ls-remote", url, "refs/heads/main").stdout.split()[0] == written.commit
