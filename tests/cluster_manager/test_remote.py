"""RemoteRepoWriter against a real smart-HTTP server (git http-backend) with Basic auth."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest

from fplus.cluster_manager.model.settings import Settings
from fplus.git.hosts.ours import GitServerRepos
from fplus.git.repo import ChangeSet, RemoteRepoWriter, ensure_bare_repo
from fplus.git.repo import _branch as branch_module
from harness.gitcli import bare, files_at, fsck_clean, git, push_from_clone
from tests.cluster_manager.git_http import GitHttpServer

AUTH = ("flux", "s3cret")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GitHttpServer]:
    ensure_bare_repo(tmp_path / "srv" / "cluster.git")
    with GitHttpServer(tmp_path / "srv", auth=AUTH) as srv:
        yield srv


def test_apply_then_clone_shows_the_file(server: GitHttpServer, tmp_path: Path) -> None:
    w = RemoteRepoWriter(server.url("cluster.git"), tmp_path / "cache", *AUTH)
    first = w.apply(ChangeSet(writes={"README.md": "hi\n"}), "Init")
    assert first.changed
    assert w.apply(ChangeSet(writes={"README.md": "hi\n"}), "noop") == type(first)(first.commit,
                                                                                  False)
    second = w.apply(ChangeSet(writes={"edo/cluster/a.yaml": "a\n"}), "two")
    git("clone", "-q", server.url("cluster.git", with_auth=True), tmp_path / "clone")
    assert (tmp_path / "clone" / "README.md").read_text() == "hi\n"
    assert git("rev-parse", "HEAD", cwd=tmp_path / "clone").strip() == second.commit
    fsck_clean(tmp_path / "srv" / "cluster.git")


def test_wrong_credentials_fail(server: GitHttpServer, tmp_path: Path) -> None:
    w = RemoteRepoWriter(server.url("cluster.git"), tmp_path / "cache", "flux", "wrong",
                         max_attempts=2)
    with pytest.raises(pygit2.GitError):
        w.apply(ChangeSet(writes={"a": "1"}), "a")


def test_push_rejected_by_a_concurrent_push_is_retried(server: GitHttpServer, tmp_path: Path,
                                                       monkeypatch) -> None:
    url = server.url("cluster.git")
    w = RemoteRepoWriter(url, tmp_path / "cache", *AUTH)
    w.apply(ChangeSet(writes={"base": "0"}), "base")
    real_build, calls = branch_module.build_commit, []

    def racing_build(*args, **kwargs):
        built = real_build(*args, **kwargs)
        if not calls:  # someone else pushes after our fetch, before our push
            push_from_clone(server.url("cluster.git", with_auth=True), tmp_path / "c",
                            "theirs", "t")
        calls.append(args[1])
        return built

    monkeypatch.setattr(branch_module, "build_commit", racing_build)
    result = w.apply(ChangeSet(writes={"ours": "1"}), "ours")
    assert len(calls) == 2 and calls[0] != calls[1]
    served = tmp_path / "srv" / "cluster.git"
    assert files_at(served) == ["base", "ours", "theirs"]
    assert bare(served, "rev-parse", "main").strip() == result.commit
    assert bare(served, "rev-list", "--count", "main").strip() == "3"


def test_two_remote_writers_race(server: GitHttpServer, tmp_path: Path) -> None:
    writers = [RemoteRepoWriter(server.url("cluster.git"), tmp_path / f"cache{i}", *AUTH)
               for i in range(2)]

    def run(i: int) -> None:
        for n in range(5):
            writers[i].apply(ChangeSet(writes={f"w{i}/{n}": "x"}), f"w{i} {n}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(files_at(tmp_path / "srv" / "cluster.git")) == 10
    fsck_clean(tmp_path / "srv" / "cluster.git")


def test_cluster_repos_write_through_the_internal_url(server: GitHttpServer,
                                                      tmp_path: Path) -> None:
    """--git-internal: repos are written through it while edges keep the public --git URL."""
    ensure_bare_repo(tmp_path / "srv" / "uuid" / "c1.git")
    settings = Settings(config_store_url="http://127.0.0.1:9", data_dir=tmp_path / "cm",
                        git_url="http://127.0.0.9:9",  # edges' URL: nothing listens there
                        git_internal_url=server.base + "/")
    repos = GitServerRepos(settings.git_host, *AUTH)
    assert repos.write("c1", ChangeSet(writes={"edo/a.yaml": "a\n"}), "a").changed
    assert files_at(tmp_path / "srv" / "uuid" / "c1.git") == ["edo/a.yaml"]
    assert repos.read_dir("c1", "edo/") == {"edo/a.yaml": b"a\n"}
    assert repos.head("c1") == bare(tmp_path / "srv" / "uuid" / "c1.git", "rev-parse",
                                    "main").strip()


def test_remote_head_is_asked_without_fetching(server: GitHttpServer, tmp_path: Path) -> None:
    w = RemoteRepoWriter(server.url("cluster.git"), tmp_path / "cache", *AUTH)
    assert w.remote_head() is None  # no branch yet
    w.apply(ChangeSet(writes={"a": "1"}), "a")
    push_from_clone(server.url("cluster.git", with_auth=True), tmp_path / "c", "theirs", "t")
    theirs = bare(tmp_path / "srv" / "cluster.git", "rev-parse", "main").strip()
    assert w.remote_head() == theirs
    tracking = pygit2.Repository(str(tmp_path / "cache")).references.get(
        "refs/remotes/origin/main")
    assert str(tracking.target) != theirs  # nothing was fetched
    with pytest.raises(pygit2.GitError):
        RemoteRepoWriter(server.url("cluster.git"), tmp_path / "other", "flux",
                         "wrong").remote_head()


def test_history_and_a_commit_through_cluster_repos(server: GitHttpServer,
                                                   tmp_path: Path) -> None:
    """The timeline's commits when the Git server is remote: freshly fetched, newest first,
    and a commit's changed paths; a commit another pushed meanwhile is seen too."""
    ensure_bare_repo(tmp_path / "srv" / "uuid" / "c2.git")
    settings = Settings(config_store_url="http://127.0.0.1:9", data_dir=tmp_path / "cm",
                        git_url=server.base + "/")
    repos = GitServerRepos(settings.git_host, *AUTH)
    assert repos.history("c2") == []
    repos.write("c2", ChangeSet(writes={"edo/a.yaml": "a\n"}), "first")
    push_from_clone(server.url("uuid/c2.git", with_auth=True), tmp_path / "c", "theirs", "t")
    log = bare(tmp_path / "srv" / "uuid" / "c2.git", "log", "--format=%H %s", "main")
    assert [(c.sha, c.summary) for c in repos.history("c2")] == [
        tuple(line.split(" ", 1)) for line in log.splitlines()]
    newest = repos.history("c2", limit=1)[0]
    found = repos.commit("c2", newest.sha)
    assert found is not None and found.paths == ("theirs",) and found.parents
    assert repos.commit("c2", "0" * 40) is None
