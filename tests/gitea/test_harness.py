"""The Gitea harness: the pinned release answers its REST API with the token its own CLI
made, and real git pushes to and pulls from a repo created through that API."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path
from typing import Any

from harness.edgetools import component
from harness.gitcli import GIT_ENV, git, push_from_clone
from harness.gitea import ADMIN, Gitea
from harness.stack import wait_for

ORG = "edge-clusters"


def test_the_pinned_release_answers_with_the_admin_token(gitea: Gitea) -> None:
    version = gitea.api().get(f"{gitea.url}/api/v1/version", timeout=10).json()["version"]
    assert version == component("gitea").version.lstrip("v")
    me = gitea.api().get(f"{gitea.url}/api/v1/user", timeout=10)
    assert me.status_code == 200, me.text
    assert (me.json()["login"], me.json()["is_admin"]) == (ADMIN, True)
    wrong = gitea.api("0" * 40).get(f"{gitea.url}/api/v1/user", timeout=10)
    assert wrong.status_code == 401


def test_org_and_repo_through_the_api_then_push_and_pull_over_http(
        gitea: Gitea, tmp_path: Path) -> None:
    api, base = gitea.api(), f"{gitea.url}/api/v1"
    made = api.post(f"{base}/orgs", json={"username": ORG, "visibility": "private"}, timeout=30)
    assert made.status_code == 201, made.text
    repo = api.post(f"{base}/orgs/{ORG}/repos", timeout=30,
                    json={"name": "cluster-a", "private": True, "default_branch": "main"})
    assert repo.status_code == 201, repo.text
    assert repo.json()["clone_url"] == f"{gitea.url}/{ORG}/cluster-a.git"

    pushed = push_from_clone(gitea.clone_url(ORG, "cluster-a"), tmp_path / "push",
                             "README.md", "hello from fplus\n")
    # Gitea's post-receive hook queues the push; the API shows it once that is processed.
    def commits() -> list[dict[str, Any]] | None:
        got = api.get(f"{base}/repos/{ORG}/cluster-a/commits", params={"sha": "main"},
                      timeout=30)
        assert got.status_code in (200, 409), got.text  # 409: "Git Repository is empty"
        return got.json() if got.status_code == 200 else None

    assert [c["sha"] for c in wait_for(commits, what="the pushed commit")] == [pushed]
    file = api.get(f"{base}/repos/{ORG}/cluster-a/contents/README.md", timeout=30).json()
    assert base64.b64decode(file["content"]) == b"hello from fplus\n"

    git("clone", "-q", gitea.clone_url(ORG, "cluster-a"), tmp_path / "pull")
    assert git("rev-parse", "HEAD", cwd=tmp_path / "pull").strip() == pushed
    assert (tmp_path / "pull" / "README.md").read_text() == "hello from fplus\n"
    anonymous = subprocess.run(["git", "clone", "-q", f"{gitea.url}/{ORG}/cluster-a.git",
                                str(tmp_path / "anon")], env=os.environ | GIT_ENV,
                               capture_output=True, text=True, timeout=60, check=False)
    assert anonymous.returncode != 0, "a private repo was cloned without credentials"
    assert not (tmp_path / "anon" / "README.md").exists()
