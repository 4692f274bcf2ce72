"""The writer redoes only the edited lines of a directory it computed before: the trees it
commits are exactly those computed from scratch (random edits, files turned into
directories and back, directories emptied and replaced)."""

from __future__ import annotations

import random
from pathlib import Path

import pygit2
import pytest

from fplus.git.repo import ChangeSet, InvalidPath, RepoWriter, _build, _tree
from harness.gitcli import fsck_clean

NAMES = ["a", "a.b", "a-b", "a0", "b", *(f"s-{i:02d}" for i in range(30))]


def _trees(tmp: Path, seed: int, remember: bool, monkeypatch: pytest.MonkeyPatch) -> list:
    """The root tree of each of 80 random commits (or why it was not made)."""
    monkeypatch.setattr(_tree, "_LINES", _tree.Recent(64 if remember else 0))
    monkeypatch.setattr(_tree, "_PARSED", _tree.Recent(64))
    monkeypatch.setattr(_build, "_TREES", _build.Recent(256))
    rng = random.Random(seed)
    writer = RepoWriter(tmp / f"{remember}.git")
    repo = pygit2.Repository(str(writer.repo_path))
    found: list = []
    for c in range(80):
        writes, deletes, dirs = {}, set(), set()
        for _ in range(rng.randint(1, 8)):
            path = "/".join(rng.choice(NAMES) for _ in range(rng.randint(1, 3)))
            pick = rng.random()
            if pick < 0.6:
                writes[path] = f"{c} {rng.random()}".encode()
            elif pick < 0.85:
                deletes.add(path)
            else:
                dirs.add(path)
        try:
            changes = ChangeSet(writes=writes, deletes=deletes - set(writes), replace_dirs=dirs)
            commit = writer.apply(changes, f"change {c}").commit
        except (InvalidPath, ValueError) as exc:
            found.append(type(exc).__name__)
            continue
        found.append(str(repo[commit].peel(pygit2.Commit).tree_id) if commit else None)
    fsck_clean(writer.repo_path)
    return found


@pytest.mark.parametrize("seed", [1, 2])
def test_trees_built_from_remembered_lines_are_those_built_afresh(
        tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    remembered = _trees(tmp_path, seed, True, monkeypatch)
    assert sum(isinstance(t, str) and len(t) == 40 for t in remembered) > 40
    assert remembered == _trees(tmp_path, seed, False, monkeypatch)
