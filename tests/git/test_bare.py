"""The bare repos' disk format: where a repo lives, creating it, and moving a branch by
compare-and-swap, as the Git server and the Cluster Manager both rely on."""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import pygit2
import pytest

from fplus.config_store.uuids import is_uuid
from fplus.git import bare

REPO = "0f3c1a52-6a8e-4b7e-9c1d-2b4e6f8a0c1e"
# fixed, like REPO: pytest-xdist workers must collect the same test ids
OTHER = "7d2e6a10-3c4b-4f5e-8a9b-0c1d2e3f4a5b"
SHA_A = "a" * 40
SHA_B = "b" * 40


@pytest.mark.parametrize("name", [
    REPO, OTHER, REPO.upper(), REPO.replace("-", ""), f"{{{REPO}}}",
    f"urn:uuid:{REPO}", f"{REPO}\n", f" {REPO}", "../x", "x/../../etc", "", ".git", "a.git",
    REPO[:-1] + "g", REPO[:-1] + "\u0661", 42, None,
])
def test_a_repo_is_named_by_its_uuid_alone(name: object) -> None:
    """Exactly the form every service accepts (fplus.config_store.uuids.is_uuid)."""
    assert bare.is_repo_uuid(name) is is_uuid(name)


def test_repo_path_is_uuid_dot_git_under_the_repos_dir(tmp_path: Path) -> None:
    assert bare.repos_dir(tmp_path) == tmp_path / "repos"
    assert bare.repo_path(tmp_path, REPO) == tmp_path / f"{REPO}.git"


@pytest.mark.parametrize("name", ["../escape", "a/b", "", REPO.upper(), f"{REPO}/..", "."])
def test_repo_path_refuses_what_is_not_a_uuid(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="not a repo uuid"):
        bare.repo_path(tmp_path, name)


def test_create_makes_a_bare_repo_git_and_libgit2_open(tmp_path: Path) -> None:
    path = bare.repo_path(tmp_path / "deep" / "repos", REPO)  # parents are made
    assert not bare.exists(path)
    assert bare.create(path) == path
    assert bare.exists(path)
    repo = pygit2.Repository(str(path))
    assert repo.is_bare and repo.head_is_unborn
    assert (path / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert bare.stored(path.parent) == [REPO]


def test_create_is_idempotent_and_keeps_what_is_there(tmp_path: Path) -> None:
    path = bare.create(bare.repo_path(tmp_path, REPO), "trunk")
    (path / "refs" / "heads" / "trunk").write_text(f"{SHA_A}\n")
    before = sorted(p.relative_to(path) for p in path.rglob("*"))
    assert bare.create(path) == path
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == before
    assert (path / "HEAD").read_text() == "ref: refs/heads/trunk\n"
    assert bare.read_ref(path, "refs/heads/trunk") == SHA_A


def test_create_replaces_an_empty_directory(tmp_path: Path) -> None:
    path = bare.repo_path(tmp_path, REPO)
    path.mkdir()
    bare.create(path)
    assert pygit2.Repository(str(path)).is_bare


def test_concurrent_creators_share_one_repo_and_leave_no_scratch(tmp_path: Path) -> None:
    path = bare.repo_path(tmp_path, REPO)
    errors: list[BaseException] = []

    def create() -> None:
        try:
            bare.create(path)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert os.listdir(tmp_path) == [f"{REPO}.git"]
    assert pygit2.Repository(str(path)).is_bare


def test_stored_lists_repos_only(tmp_path: Path) -> None:
    other = str(uuid.uuid4())
    for name in (REPO, other):
        bare.create(bare.repo_path(tmp_path, name))
    (tmp_path / "not-a-uuid.git").mkdir()
    (tmp_path / f".{REPO}.git.init-1-abcd").mkdir()
    assert bare.stored(tmp_path) == sorted([REPO, other])


def test_compare_and_swap_creates_then_moves_a_branch(tmp_path: Path) -> None:
    git_dir = bare.create(tmp_path / "r.git")
    ref = "refs/heads/main"
    assert bare.read_ref(git_dir, ref) is None
    assert bare.compare_and_swap(git_dir, ref, SHA_A, None)
    assert bare.read_ref(git_dir, ref) == SHA_A
    assert bare.compare_and_swap(git_dir, ref, SHA_B, SHA_A)
    assert bare.read_ref(git_dir, ref) == SHA_B
    assert not (git_dir / f"{ref}.lock").exists()


@pytest.mark.parametrize("expected", [None, SHA_B])
def test_compare_and_swap_fails_when_the_branch_is_elsewhere(tmp_path: Path,
                                                            expected: str | None) -> None:
    git_dir = bare.create(tmp_path / "r.git")
    ref = "refs/heads/main"
    bare.compare_and_swap(git_dir, ref, SHA_A, None)
    assert not bare.compare_and_swap(git_dir, ref, "c" * 40, expected)
    assert bare.read_ref(git_dir, ref) == SHA_A
    assert not (git_dir / f"{ref}.lock").exists()


def test_compare_and_swap_reads_packed_refs(tmp_path: Path) -> None:
    git_dir = bare.create(tmp_path / "r.git")
    (git_dir / "packed-refs").write_text(f"# pack-refs with: peeled\n{SHA_A} refs/heads/main\n")
    assert bare.read_ref(git_dir, "refs/heads/main") == SHA_A
    assert not bare.compare_and_swap(git_dir, "refs/heads/main", SHA_B, None)
    assert bare.compare_and_swap(git_dir, "refs/heads/main", SHA_B, SHA_A)
    assert bare.read_ref(git_dir, "refs/heads/main") == SHA_B


def test_a_symbolic_ref_is_refused(tmp_path: Path) -> None:
    git_dir = bare.create(tmp_path / "r.git")
    with pytest.raises(ValueError, match="symbolic"):
        bare.read_ref(git_dir, "HEAD")


def test_a_live_lock_times_out_and_a_stale_one_is_broken(tmp_path: Path) -> None:
    git_dir = bare.create(tmp_path / "r.git")
    lock = git_dir / "refs" / "heads" / "main.lock"
    lock.write_text("")
    with pytest.raises(bare.RefLockTimeout):
        bare.compare_and_swap(git_dir, "refs/heads/main", SHA_A, None,
                                  stale_after=60, timeout=0.05)
    assert lock.exists()  # another writer's lock is never taken away while live
    old = time.time() - 120
    os.utime(lock, (old, old))
    assert bare.compare_and_swap(git_dir, "refs/heads/main", SHA_A, None, stale_after=60)
    assert bare.read_ref(git_dir, "refs/heads/main") == SHA_A


def test_git_sees_what_compare_and_swap_wrote(tmp_path: Path) -> None:
    git_dir = bare.create(tmp_path / "r.git")
    repo = pygit2.Repository(str(git_dir))
    blob = repo.create_blob(b"x")
    builder = repo.TreeBuilder()
    builder.insert("x", blob, pygit2.GIT_FILEMODE_BLOB)
    sig = pygit2.Signature("t", "t@example.com")
    commit = str(repo.create_commit(None, sig, sig, "m", builder.write(), []))
    assert bare.compare_and_swap(git_dir, "refs/heads/main", commit, None)
    assert str(pygit2.Repository(str(git_dir)).head.target) == commit
