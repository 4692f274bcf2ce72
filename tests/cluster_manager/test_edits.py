"""Read-modify-write edits inside the group commit: concurrent edits of one file compose,
a failing edit fails only its own caller, and an edit can delete a file."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fplus.git.repo import ChangeSet, InvalidPath, RepoWriter
from harness.gitcli import bare, files_at, fsck_clean


def add_key(key: str, value: str):
    def edit(old: bytes | None) -> str:
        doc = json.loads(old) if old else {}
        doc[key] = value
        return json.dumps(doc, sort_keys=True)
    return edit


def test_edit_sees_absent_then_current_content(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    writer = RepoWriter(repo)
    seen: list[bytes | None] = []

    def record(old: bytes | None) -> str:
        seen.append(old)
        return (old or b"").decode() + "x"

    writer.apply(ChangeSet(edits={"f": record}), "one")
    writer.apply(ChangeSet(edits={"f": record}), "two")
    assert seen == [None, b"x"]
    assert bare(repo, "show", "main:f") == "xx"


def test_concurrent_edits_of_one_file_all_land(tmp_path: Path) -> None:
    """64 callers each add their own key to the same file: batched, none lost."""
    repo = tmp_path / "r.git"
    writer = RepoWriter(repo)
    writer.apply(ChangeSet(writes={"other": "1"}), "init")
    start = threading.Barrier(64)

    def put(i: int) -> str | None:
        start.wait()
        return writer.apply(ChangeSet(edits={"s.json": add_key(f"k{i}", str(i))}),
                            f"key {i}").commit

    with ThreadPoolExecutor(64) as pool:
        commits = list(pool.map(put, range(64)))
    doc = json.loads(bare(repo, "show", "main:s.json"))
    assert doc == {f"k{i}": str(i) for i in range(64)}
    assert len(set(commits)) < 64  # batched: callers shared commits
    assert int(bare(repo, "rev-list", "--count", "main")) == len(set(commits)) + 1
    fsck_clean(repo)


def test_failing_edit_fails_only_its_caller(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    writer = RepoWriter(repo)
    go = threading.Event()

    def boom(old: bytes | None) -> str:
        raise ValueError("refused by the edit")

    def slow_first(old: bytes | None) -> str:
        go.wait(5)
        return "first"

    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(writer.apply, ChangeSet(edits={"a": slow_first}), "a")
        bad = pool.submit(writer.apply, ChangeSet(writes={"b": "b"}, edits={"c": boom}), "bad")
        good = pool.submit(writer.apply, ChangeSet(writes={"d": "d"}), "good")
        go.set()
        assert first.result().changed and good.result().changed
        with pytest.raises(ValueError, match="refused by the edit"):
            bad.result()
    assert files_at(repo) == ["a", "d"]  # nothing of the failed set, not even its write


def test_edit_returning_none_deletes(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    writer = RepoWriter(repo)
    writer.apply(ChangeSet(writes={"dir/f": "1", "g": "2"}), "init")
    assert writer.apply(ChangeSet(edits={"dir/f": lambda old: None}), "rm").changed
    assert files_at(repo) == ["g"]
    assert writer.apply(ChangeSet(edits={"dir/f": lambda old: None}), "rm again").changed \
        is False


@pytest.mark.parametrize("other", [
    {"writes": {"f": "x"}}, {"deletes": {"f"}}, {"replace_dirs": {"d"}},
])
def test_edit_paths_may_not_be_touched_otherwise(other: dict) -> None:
    path = "d/f" if "replace_dirs" in other else "f"
    with pytest.raises(InvalidPath):
        ChangeSet(edits={path: lambda old: "y"}, **other)


def test_edits_must_be_functions() -> None:
    with pytest.raises(TypeError):
        ChangeSet(edits={"f": "not a function"})  # type: ignore[dict-item]
