"""Clone, fetch and push with the real git CLI over http://127.0.0.1, as the root principal."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fplus.config_store import uuids
from harness.servers import Api
from tests.conftest import grant
from tests.git_server.conftest import ADMIN, Git, GitServer, Repo, wait_for


def test_ping(git_server: GitServer) -> None:
    r = git_server.api().get("/ping")
    assert r.status_code == 200
    assert r.json()["service"] == "7adf4db0-2e7b-4a68-ab9d-376f4c5ce14b"


def test_empty_repo_clones_and_is_created_lazily_with_head_on_main(
        git: Git, git_server: GitServer, repo: Repo, work: Path) -> None:
    assert not git_server.bare(repo.uuid).exists()  # nothing until the first access
    git.clone(git_server.uuid_url(repo.uuid), work / "clone")
    assert (work / "clone" / ".git").is_dir()
    bare = git_server.bare(repo.uuid)
    assert (bare / "HEAD").read_text().strip() == "ref: refs/heads/main"
    assert git.run("--git-dir", str(bare), "rev-parse", "--is-bare-repository").stdout.strip() \
        == "true"


def test_push_then_clone_fetch_and_status(git: Git, git_server: GitServer, repo: Repo,
                                          work: Path, root_git: Api) -> None:
    url = git_server.uuid_url(repo.uuid)
    first = git.new_work(work / "w", {"README.md": "hello\n", "dir/a.yaml": "a: 1\n"})
    git.push(work / "w", url)

    git.clone(url, work / "c1")
    assert git.head(work / "c1") == first
    assert (work / "c1" / "dir" / "a.yaml").read_text() == "a: 1\n"
    assert git.run("symbolic-ref", "HEAD", cwd=work / "c1").stdout.strip() == "refs/heads/main"

    r = root_git.get(f"/v1/status/{repo.uuid}")
    assert r.status_code == 200, r.text
    assert r.json() == {"main": first}

    second = git.commit_file(work / "w", "b.txt", "b\n")
    git.push(work / "w", url)
    git.run("fetch", "--quiet", "origin", cwd=work / "c1")
    assert git.head(work / "c1", "origin/main") == second
    git.run("merge", "--quiet", "--ff-only", "origin/main", cwd=work / "c1")
    assert (work / "c1" / "b.txt").read_text() == "b\n"

    # a second branch shows up in the status too; a clone can push back
    git.run("checkout", "--quiet", "-b", "feature", cwd=work / "c1")
    third = git.commit_file(work / "c1", "c.txt", "c\n")
    git.push(work / "c1", url, "feature:refs/heads/feature")
    assert root_git.get(f"/v1/status/{repo.uuid}").json() == {"main": second, "feature": third}
    ls = git.ls_remote(url).stdout
    assert f"{second}\trefs/heads/main" in ls and f"{third}\trefs/heads/feature" in ls
    git.fsck(git_server.bare(repo.uuid))


def test_both_url_forms_reach_the_same_repo(git: Git, git_server: GitServer, repo: Repo,
                                            work: Path) -> None:
    sha = git.new_work(work / "w")
    git.push(work / "w", git_server.path_url(repo.path))  # push through /git/<group>/<name>
    git.clone(git_server.uuid_url(repo.uuid), work / "by-uuid")
    git.clone(git_server.path_url(repo.path), work / "by-path")
    assert git.head(work / "by-uuid") == git.head(work / "by-path") == sha


def test_non_fast_forward_push_is_refused_and_force_push_works(
        git: Git, git_server: GitServer, repo: Repo, work: Path, root_git: Api) -> None:
    url = git_server.uuid_url(repo.uuid)
    git.new_work(work / "a", {"a": "1\n"})
    git.push(work / "a", url)
    other = git.new_work(work / "b", {"b": "2\n"})  # unrelated history
    refused = git.push(work / "b", url, check=False)
    assert refused.returncode != 0
    assert "rejected" in refused.stdout + refused.stderr
    git.push(work / "b", url, "+HEAD:refs/heads/main")
    assert root_git.get(f"/v1/status/{repo.uuid}").json() == {"main": other}


def test_branch_delete_over_http(git: Git, git_server: GitServer, repo: Repo, work: Path,
                                 root_git: Api) -> None:
    url = git_server.uuid_url(repo.uuid)
    sha = git.new_work(work / "w")
    git.push(work / "w", url)
    git.push(work / "w", url, "HEAD:refs/heads/tmp")
    assert set(root_git.get(f"/v1/status/{repo.uuid}").json()) == {"main", "tmp"}
    git.push(work / "w", url, ":refs/heads/tmp")
    assert root_git.get(f"/v1/status/{repo.uuid}").json() == {"main": sha}


def test_large_push_with_chunked_body(git: Git, git_server: GitServer, repo: Repo,
                                      work: Path) -> None:
    """A pack bigger than http.postBuffer is sent with Transfer-Encoding: chunked."""
    url = git_server.uuid_url(repo.uuid)
    git.run("init", "--quiet", "-b", "main", str(work / "w"))
    git.commit_file(work / "w", "blob.bin", os.urandom(3 * 1024 * 1024))  # incompressible
    git.run("-c", "http.postBuffer=65536", "push", "--quiet", url, "HEAD:refs/heads/main",
            cwd=work / "w")
    git.clone(url, work / "c")
    assert (work / "c" / "blob.bin").read_bytes() == (work / "w" / "blob.bin").read_bytes()
    # an incremental fetch after more pushes
    for i in range(5):
        git.commit_file(work / "w", f"f{i}.txt", f"{i}\n")
    git.run("-c", "http.postBuffer=65536", "push", "--quiet", url, "HEAD:refs/heads/main",
            cwd=work / "w")
    git.run("fetch", "--quiet", "origin", cwd=work / "c")
    assert git.head(work / "c", "origin/main") == git.head(work / "w")
    git.fsck(git_server.bare(repo.uuid))


def test_concurrent_pushes_and_clones(git: Git, git_server: GitServer, repo: Repo,
                                      work: Path, root_git: Api) -> None:
    url = git_server.uuid_url(repo.uuid)
    base = git.new_work(work / "base")
    git.push(work / "base", url)
    shas = {}
    for i in range(6):
        git.run("clone", "--quiet", str(work / "base"), str(work / f"w{i}"))
        shas[f"b{i}"] = git.commit_file(work / f"w{i}", f"f{i}.txt", f"{i}\n")

    def push(i: int) -> None:
        git.push(work / f"w{i}", url, f"HEAD:refs/heads/b{i}")

    def clone(i: int) -> str:
        git.clone(url, work / f"c{i}")
        return git.head(work / f"c{i}")

    with ThreadPoolExecutor(12) as pool:
        pushes = [pool.submit(push, i) for i in range(6)]
        clones = [pool.submit(clone, i) for i in range(6)]
        for f in pushes:
            f.result()
        assert {f.result() for f in clones} == {base}
    assert root_git.get(f"/v1/status/{repo.uuid}").json() == {"main": base, **shas}
    git.fsck(git_server.bare(repo.uuid))


def test_status_lists_configured_repos(git_server: GitServer, repo: Repo, root_git: Api) -> None:
    listed = wait_for(lambda: root_git.get("/v1/status").json(), lambda v: repo.uuid in v)
    assert repo.uuid in listed
    # a configured repo that was never accessed has no branches yet
    r = root_git.get(f"/v1/status/{repo.uuid}")
    assert r.status_code == 200 and r.json() == {}


def test_status_needs_credentials_and_pull(git_server: GitServer, repo: Repo, admin: Api,
                                           new_user) -> None:
    """A repo's status is shown only to those who may pull it (ACS shows it to anyone)."""
    assert git_server.api().get("/v1/status").status_code == 401
    user = new_user()
    as_user = git_server.api(user.auth)
    assert as_user.get(f"/v1/status/{repo.uuid}").status_code == 403
    assert repo.uuid not in as_user.get("/v1/status").json()
    grant(admin, user.uuid, uuids.GitPerm.Pull, repo.uuid)
    r = wait_for(lambda: as_user.get(f"/v1/status/{repo.uuid}"), lambda r: r.status_code == 200)
    assert r.status_code == 200 and r.json() == {}
    assert repo.uuid in as_user.get("/v1/status").json()


def test_status_of_unknown_repo_is_404_quickly(git_server: GitServer, root_git: Api) -> None:
    """ACS never completes this response; ours answers (the timeout would raise)."""
    r = root_git.get("/v1/status/6a1c0e56-0000-4000-8000-000000000000", timeout=5)
    assert r.status_code == 404
    assert root_git.get("/v1/status/not-a-uuid").status_code == 410


def test_root_basic_credentials_via_requests(git_server: GitServer, repo: Repo) -> None:
    r = git_server.api(ADMIN).get(f"/uuid/{repo.uuid}/info/refs",
                                  params={"service": "git-upload-pack"})
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "application/x-git-upload-pack-advertisement"
    assert r.headers.get("Cache-Control", "").startswith("no-cache")
