"""Change-set validation: unsafe paths are refused before anything touches a repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from fplus.git.repo import ChangeSet, InvalidPath, RepoWriter
from harness.gitcli import bare

BAD_PATHS = ["../x", "a/../../x", "/abs", "a//b", "a/./b", "./a", "a/", ".git/config",
             "a/.GIT/x", "a/.git./x", "", "a\\b", "a\x00b", "a\nb", "..", "."]


@pytest.mark.parametrize("path", BAD_PATHS)
@pytest.mark.parametrize("kind", ["writes", "deletes", "replace_dirs", "edits"])
def test_unsafe_paths_are_refused(path: str, kind: str) -> None:
    arg = {path: b"x"} if kind == "writes" else {path: bytes} if kind == "edits" else {path}
    with pytest.raises(InvalidPath):
        ChangeSet(**{kind: arg})


def test_refused_change_leaves_repo_unchanged(tmp_path) -> None:
    writer = RepoWriter(tmp_path / "r.git")
    head = writer.apply(ChangeSet(writes={"ok": "1"}), "first").commit
    objects_before = bare(tmp_path / "r.git", "count-objects", "-v")
    for path in BAD_PATHS:
        with pytest.raises(InvalidPath):
            writer.apply(ChangeSet(writes={"fine": "2", path: "evil"}), "evil")
    assert writer.head() == head
    assert bare(tmp_path / "r.git", "count-objects", "-v") == objects_before
    assert not (tmp_path / "x").exists()


def test_good_paths_and_normalisation() -> None:
    cs = ChangeSet(writes={"edo/cluster/a.yaml": "é", ".gitignore": b"x", "a.git/b": b""},
                   deletes=["x/y"], replace_dirs=("edo/cluster",))
    assert cs.writes["edo/cluster/a.yaml"] == "é".encode()
    assert cs.deletes == frozenset({"x/y"})
    assert cs.replace_dirs == frozenset({"edo/cluster"})
    assert bool(cs) and not bool(ChangeSet())


def test_contradictions_are_refused() -> None:
    with pytest.raises(InvalidPath):
        ChangeSet(writes={"a": "1"}, deletes={"a"})
    with pytest.raises(InvalidPath):
        ChangeSet(writes={"a": "1", "a/b": "2"})
    with pytest.raises(InvalidPath):
        ChangeSet(deletes="a/b")  # a bare string is not a collection of paths
    with pytest.raises(TypeError):
        ChangeSet(writes={"a": 1})  # type: ignore[dict-item]


def test_always_commit_makes_a_new_revision_of_an_unchanged_tree(tmp_path: Path) -> None:
    writer = RepoWriter(tmp_path / "r.git")
    first = writer.apply(ChangeSet(writes={"a": "1"}), "a")
    same = writer.apply(ChangeSet(writes={"a": "1"}), "again")
    forced = writer.apply(ChangeSet(writes={"a": "1"}, always_commit=True), "redeploy")
    assert same.commit == first.commit and not same.changed
    assert forced.changed and forced.commit != first.commit
    assert not ChangeSet() and ChangeSet(always_commit=True)
