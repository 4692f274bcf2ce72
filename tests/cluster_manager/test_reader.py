"""Reading files at a ref straight from the bare repository."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fplus.git.repo import (
    ChangeSet,
    InvalidPath,
    RepoWriter,
    commit_info,
    head,
    history,
    list_files,
    read_file,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    w = RepoWriter(tmp_path / "r.git")
    w.apply(ChangeSet(writes={"flux-system/flux-system.yaml": "kind: x\n", "README.md": b"r\x00"}),
            "one")
    return tmp_path / "r.git"


def test_read_file(repo: Path) -> None:
    assert read_file(repo, "flux-system/flux-system.yaml") == b"kind: x\n"
    assert read_file(repo, "README.md", ref="main") == b"r\x00"
    assert read_file(repo, "missing.yaml") is None
    assert read_file(repo, "flux-system") is None  # a directory is not a file
    assert read_file(repo, "README.md", ref="refs/heads/nope") is None
    assert read_file(repo.parent / "nope.git", "README.md") is None
    with pytest.raises(InvalidPath):
        read_file(repo, "../etc/passwd")


def test_reader_sees_new_commits_and_late_repos(repo: Path, tmp_path: Path) -> None:
    late = tmp_path / "late.git"
    assert read_file(late, "a") is None  # a miss is not cached
    RepoWriter(late).apply(ChangeSet(writes={"a": "1"}), "a")
    assert read_file(late, "a") == b"1"
    first = RepoWriter(repo).apply(ChangeSet(writes={"README.md": "v2"}), "v2").commit
    assert read_file(repo, "README.md") == b"v2"
    RepoWriter(repo).apply(ChangeSet(deletes={"README.md"}), "gone")
    assert read_file(repo, "README.md") is None
    assert read_file(repo, "README.md", ref=first) == b"v2"


def test_list_files(repo: Path) -> None:
    assert list_files(repo) == ["README.md", "flux-system/flux-system.yaml"]
    assert list_files(repo, "flux-system/") == ["flux-system/flux-system.yaml"]
    assert list_files(repo, "README.md") == ["README.md"]
    assert list_files(repo, "nope") == []
    assert list_files(repo, ref="nope") == []
    assert list_files(repo.parent / "nope.git") == []


def test_reader_is_thread_safe(repo: Path) -> None:
    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(lambda _: read_file(repo, "flux-system/flux-system.yaml"),
                            range(2000)))
    assert set(got) == {b"kind: x\n"}


def test_head_follows_the_branch(repo: Path, tmp_path: Path) -> None:
    assert head(tmp_path / "missing.git") is None
    assert head(repo, "refs/heads/nope") is None
    before = head(repo)
    after = RepoWriter(repo).apply(ChangeSet(writes={"b": "2"}), "b").commit
    assert before is not None and head(repo) == after != before


def test_history_newest_first_and_commits_of_main_only(repo: Path) -> None:
    w = RepoWriter(repo)
    second = w.apply(ChangeSet(writes={"edo/a.yaml": "a\n"}, deletes={"README.md"}),
                     "two\n\nbody").commit
    assert second is not None
    shown = history(repo)
    assert [c.summary for c in shown] == ["two", "one"] and shown[0].sha == second
    assert [c.sha for c in history(repo, limit=1)] == [second]
    assert history(repo.parent / "nope.git") == []
    found = commit_info(repo, second)
    assert found is not None and found.message == "two\n\nbody\n"
    assert found.paths == ("README.md", "edo/a.yaml")  # a delete and a write
    first = commit_info(repo, shown[1].sha)
    assert first is not None and first.parents == ()
    assert first.paths == ("README.md", "flux-system/flux-system.yaml")  # the root commit
    side = RepoWriter(repo, branch="side").apply(ChangeSet(writes={"s": "s"}), "side").commit
    assert side is not None and commit_info(repo, side) is None  # not on main
    for bad in ("HEAD", "main", second[:12], second.upper(), "../" + second[3:]):
        assert commit_info(repo, bad) is None
