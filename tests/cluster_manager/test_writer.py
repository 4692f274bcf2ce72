"""RepoWriter on a bare repository, checked with the real git CLI."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fplus.git.bare import RefLockTimeout
from fplus.git.repo import ChangeSet, RepoWriter, ensure_bare_repo, writer_for
from fplus.git.repo import _branch as branch_module
from harness.gitcli import bare, files_at, fsck_clean, git, push_from_clone


def test_apply_writes_files_as_one_commit(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    result = RepoWriter(repo).apply(ChangeSet(writes={"README.md": "hello\n",
                                                      "edo/cluster/a.yaml": b"a: 1\n"}), "Init")
    assert result.changed and len(result.commit) == 40
    assert bare(repo, "rev-parse", "main").strip() == result.commit
    assert bare(repo, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert bare(repo, "show", "main:edo/cluster/a.yaml") == "a: 1\n"
    assert files_at(repo) == ["README.md", "edo/cluster/a.yaml"]
    assert bare(repo, "log", "--format=%an <%ae>|%s|%P", "main").strip() == \
        "Edge deployment operator <cluster-manager@localhost>|Init|"
    fsck_clean(repo)


def test_deletes_replace_dirs_and_noop(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    w = RepoWriter(repo)
    w.apply(ChangeSet(writes={"edo/cluster/old.yaml": "1", "edo/cluster/keep.yaml": "2",
                              "edo/cluster/sub/x": "3", "by-hand/x": "mine",
                              "edo/secrets/ns/s.yaml": "s", "README.md": "r"}), "one")
    regen = ChangeSet(writes={"edo/cluster/keep.yaml": "2", "edo/cluster/new.yaml": "4"},
                      replace_dirs={"edo/cluster"})
    second = w.apply(regen, "Cluster flux update")
    assert second.changed
    assert files_at(repo) == ["README.md", "by-hand/x", "edo/cluster/keep.yaml",
                              "edo/cluster/new.yaml", "edo/secrets/ns/s.yaml"]
    again = w.apply(regen, "Cluster flux update")
    assert again == type(again)(second.commit, False)
    assert bare(repo, "rev-list", "--count", "main").strip() == "2"
    third = w.apply(ChangeSet(deletes={"edo/secrets/ns/s.yaml", "missing/file", "by-hand"}),
                    "Remove sealed secret")
    assert third.changed
    assert files_at(repo) == ["README.md", "by-hand/x", "edo/cluster/keep.yaml",
                              "edo/cluster/new.yaml"]
    assert "edo/secrets" not in bare(repo, "ls-tree", "-r", "-t", "--name-only", "main")
    assert w.apply(ChangeSet(deletes={"nothing"}), "noop").changed is False
    assert bare(repo, "rev-list", "--count", "main").strip() == "3"
    fsck_clean(repo)


def test_noop_on_missing_branch_makes_no_commit(tmp_path: Path) -> None:
    w = RepoWriter(tmp_path / "r.git")
    assert w.apply(ChangeSet(deletes={"a"}, replace_dirs={"b"}), "nothing").commit is None
    assert w.head() is None


def test_file_and_directory_replace_each_other(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    w = RepoWriter(repo)
    w.apply(ChangeSet(writes={"a": "file", "d/x": "1"}), "one")
    w.apply(ChangeSet(writes={"a/b": "now a dir", "d": "now a file"}, deletes={"d/x"}), "two")
    assert files_at(repo) == ["a/b", "d"]
    fsck_clean(repo)


def test_executable_bit_is_kept(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    push_from_clone(f"file://{ensure_bare_repo(repo).path}", tmp_path / "c", "run.sh", "v1")
    git("update-index", "--chmod=+x", "run.sh", cwd=tmp_path / "c")
    git("commit", "-q", "-m", "x", cwd=tmp_path / "c")
    git("push", "-q", "origin", "HEAD:main", cwd=tmp_path / "c")
    RepoWriter(repo).apply(ChangeSet(writes={"run.sh": "v2"}), "update")
    assert bare(repo, "ls-tree", "main", "run.sh").startswith("100755 blob")


def test_external_push_between_applies_is_kept(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    w = RepoWriter(repo)
    w.apply(ChangeSet(writes={"ours/1": "1"}), "ours 1")
    theirs = push_from_clone(f"file://{repo}", tmp_path / "c", "theirs/1", "t")
    result = w.apply(ChangeSet(writes={"ours/2": "2"}), "ours 2")
    assert bare(repo, "rev-parse", "main^").strip() == theirs
    assert files_at(repo) == ["ours/1", "ours/2", "theirs/1"]
    assert result.commit == bare(repo, "rev-parse", "main").strip()


def test_push_during_our_build_forces_a_rebuild(tmp_path: Path, monkeypatch) -> None:
    repo = tmp_path / "r.git"
    w = RepoWriter(repo)
    w.apply(ChangeSet(writes={"base": "0"}), "base")
    real_build, calls = branch_module.build_commit, []

    def racing_build(*args, **kwargs):
        built = real_build(*args, **kwargs)
        if not calls:  # someone pushes after we built on the old head, before our CAS
            push_from_clone(f"file://{repo}", tmp_path / "c", "theirs", "t")
        calls.append(args[1])
        return built

    monkeypatch.setattr(branch_module, "build_commit", racing_build)
    result = w.apply(ChangeSet(writes={"ours": "1"}), "ours")
    assert len(calls) == 2 and calls[0] != calls[1]
    assert files_at(repo) == ["base", "ours", "theirs"]
    assert bare(repo, "rev-list", "--count", "main").strip() == "3"
    assert result.commit == bare(repo, "rev-parse", "main").strip()
    fsck_clean(repo)


def test_packed_ref_and_git_gc_are_respected(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    w = RepoWriter(repo)
    first = w.apply(ChangeSet(writes={"a": "1"}), "a").commit
    bare(repo, "pack-refs", "--all")
    assert not (repo / "refs/heads/main").exists()
    second = w.apply(ChangeSet(writes={"b": "2"}), "b").commit
    assert bare(repo, "rev-parse", "main^").strip() == first
    assert bare(repo, "rev-parse", "main").strip() == second
    bare(repo, "gc", "--quiet")  # git's own maintenance: repack, pack-refs, prune
    third = w.apply(ChangeSet(writes={"c": "3"}), "c").commit
    assert bare(repo, "rev-parse", "main^").strip() == second
    assert bare(repo, "rev-parse", "main").strip() == third
    assert files_at(repo) == ["a", "b", "c"]
    fsck_clean(repo)


def test_stale_lock_is_broken_live_lock_is_waited_for(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    w = RepoWriter(repo, stale_lock_after=10, lock_timeout=5)
    w.apply(ChangeSet(writes={"a": "1"}), "a")
    lock = repo / "refs/heads/main.lock"
    lock.write_text("0" * 40 + "\n")
    os.utime(lock, (time.time() - 60, time.time() - 60))
    assert w.apply(ChangeSet(writes={"b": "1"}), "b").changed  # stale: broken
    lock.write_text("")
    threading.Timer(0.3, lock.unlink).start()
    started = time.monotonic()
    assert w.apply(ChangeSet(writes={"c": "1"}), "c").changed  # live: waited for
    assert time.monotonic() - started >= 0.25
    lock.write_text("")
    impatient = RepoWriter(repo, lock_timeout=0.2)
    with pytest.raises(RefLockTimeout):
        impatient.apply(ChangeSet(writes={"d": "1"}), "d")
    assert lock.exists()  # a live lock is never broken
    lock.unlink()
    assert files_at(repo) == ["a", "b", "c"]


def test_concurrent_creation_yields_one_repository(tmp_path: Path) -> None:
    repo = tmp_path / "new" / "r.git"
    with ThreadPoolExecutor(8) as pool:
        paths = list(pool.map(lambda _: ensure_bare_repo(repo).path, range(8)))
    assert len(set(paths)) == 1
    assert [p for p in (tmp_path / "new").iterdir()] == [repo]
    (tmp_path / "empty").mkdir()
    assert ensure_bare_repo(tmp_path / "empty").is_bare


def test_writer_for_shares_one_writer_per_repo(tmp_path: Path) -> None:
    a = writer_for(tmp_path / "r.git")
    assert writer_for(str(tmp_path / "r.git")) is a
    assert writer_for(tmp_path / "x" / ".." / "r.git") is a
    assert writer_for(tmp_path / "r.git", "other") is not a
    with pytest.raises(ValueError):
        RepoWriter(tmp_path / "r.git", branch="bad..name")


def test_batch_members_learn_the_commit_and_their_own_effect(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    w = RepoWriter(repo)
    w.apply(ChangeSet(writes={"same": "1", "d/x": "1"}), "seed")
    results = w._commit_batch([  # what the group committer hands the leader
        (ChangeSet(writes={"a": "1"}), "Add a"),
        (ChangeSet(writes={"same": "1"}), "No-op"),
        (ChangeSet(writes={"d/x": "1"}, replace_dirs={"d"}), "Regenerate d, identical"),
        (ChangeSet(deletes={"a"}, writes={"b": "2"}), "Swap a for b"),
    ])
    head = bare(repo, "rev-parse", "main").strip()
    assert [(r.commit, r.changed) for r in results] == [
        (head, True), (head, False), (head, False), (head, True)]
    assert files_at(repo) == ["b", "d/x", "same"]
    assert bare(repo, "log", "-1", "--format=%B", "main").strip() == \
        "Apply 2 changes\n\nAdd a\n\nSwap a for b"
    cancelling = w._commit_batch([(ChangeSet(writes={"c": "1"}), "add c"),
                                  (ChangeSet(deletes={"c"}), "remove c")])
    assert [(r.commit, r.changed) for r in cancelling] == [(head, False), (head, False)]


def test_created_repository_is_one_git_accepts(tmp_path: Path) -> None:
    """The hand-made bare layout: git sees a bare repo on ``main`` and takes a push into it."""
    repo = tmp_path / "made.git"
    ensure_bare_repo(repo, branch="main")
    assert bare(repo, "rev-parse", "--is-bare-repository").strip() == "true"
    assert bare(repo, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert bare(repo, "config", "core.repositoryformatversion").strip() == "0"
    pushed = push_from_clone(f"file://{repo}", tmp_path / "c", "a.txt", "x")
    RepoWriter(repo).apply(ChangeSet(writes={"b.txt": "y"}), "ours on top")
    assert bare(repo, "rev-parse", "main~1").strip() == pushed
    assert files_at(repo) == ["a.txt", "b.txt"]
    fsck_clean(repo)
