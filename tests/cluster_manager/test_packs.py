"""Objects go into one pack per commit; small packs get merged without losing any object."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2
import pytest

from fplus.git.repo import ChangeSet, RepoWriter, _tree, ensure_bare_repo, read_file
from fplus.git.repo._build import build_commit
from fplus.git.repo._maintenance import geometric_rollup, merge_small_packs
from fplus.git.repo._pack import git_hash, pack_ids, whole_records, write_pack
from fplus.git.repo._recent import Recent
from harness.gitcli import bare, files_at, fsck_clean, git


def _packs(repo: Path) -> list[Path]:
    return sorted((repo / "objects" / "pack").glob("pack-*.idx"))


def test_pack_and_index_match_what_git_writes(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    ensure_bare_repo(repo)
    big = os.urandom(300_000)
    objects = {git_hash(3, d): (3, d) for d in (b"", b"x", b"y" * 17, big)}
    name = write_pack(repo / "objects" / "pack", objects)
    pack = repo / "objects" / "pack" / f"{name}.pack"
    git("index-pack", "-o", tmp_path / "git.idx", pack)
    assert (tmp_path / "git.idx").read_bytes() == pack.with_suffix(".idx").read_bytes()
    assert sorted(pack_ids(pack.with_suffix(".idx"))) == sorted(objects)
    assert "ok" in git("verify-pack", "-v", pack.with_suffix(".idx"))
    blob = git_hash(3, big).hex()
    assert bare(repo, "cat-file", "-s", blob).strip() == str(len(big))


def test_one_pack_per_commit_and_no_loose_objects(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    w = RepoWriter(repo, max_small_packs=1000)
    for i in range(3):
        w.apply(ChangeSet(writes={f"d/{i}": str(i), "e/f/g": str(i)}), f"c{i}")
    assert len(_packs(repo)) == 3
    assert bare(repo, "count-objects").startswith("0 objects")
    fsck_clean(repo)


def test_small_packs_are_merged_keeping_every_object(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    w = RepoWriter(repo, max_small_packs=4)
    # an object of a writer that has not moved its ref yet: unreachable, must survive
    pending = git_hash(3, b"in flight")
    write_pack(repo / "objects" / "pack", {pending: (3, b"in flight")})
    for i in range(40):
        w.apply(ChangeSet(writes={f"files/{i}": str(i)}), f"c{i}")
        assert read_file(repo, f"files/{i // 2}") == str(i // 2).encode()  # packs come and go
    assert len(_packs(repo)) <= 8
    assert read_file(repo, "files/0") == b"0" and read_file(repo, "files/39") == b"39"
    assert files_at(repo) == sorted(f"files/{i}" for i in range(40))
    assert bare(repo, "cat-file", "-p", pending.hex()) == "in flight"
    assert int(bare(repo, "rev-list", "--count", "main")) == 40
    assert RepoWriter(repo).apply(ChangeSet(writes={"after": "1"}), "after").changed
    fsck_clean(repo)


def test_merge_leaves_too_few_or_foreign_packs_alone(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    w = RepoWriter(repo, max_small_packs=1000)
    for i in range(3):
        w.apply(ChangeSet(writes={f"{i}": "x"}), f"c{i}")
    r = pygit2.Repository(str(repo))
    assert merge_small_packs(r, min_count=4) == 0
    (repo / "objects" / "pack" / "merge-packs.lock").touch()
    assert merge_small_packs(r, min_count=2) == 0  # somebody else is merging
    (repo / "objects" / "pack" / "merge-packs.lock").unlink()
    assert merge_small_packs(r, min_count=2) == 3
    assert len(_packs(repo)) == 1
    fsck_clean(repo)


@pytest.mark.parametrize(("sizes", "merged"), [
    ([], 0),
    ([5], 0),
    ([5, 5, 5], 3),                # equal packs: all rolled up
    ([1, 2, 4, 8], 0),             # already geometric
    ([1, 1, 1, 100], 3),           # the new small ones; the big one stays
    ([1, 1, 1, 4, 100], 4),        # the rollup (3) catches up with 4: both go
    ([10, 10, 30, 1000], 3),       # 10+10 < 2*30 pulls 30 in; 1000 stays
])
def test_geometric_rollup(sizes: list[int], merged: int) -> None:
    assert geometric_rollup(sizes) == merged


def test_a_file_edited_twice_in_one_batch_stores_only_its_final_content(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    ensure_bare_repo(repo)
    r = pygit2.Repository(str(repo))
    built = build_commit(r, None, [(ChangeSet(writes={"a/s.yaml": "v1", "b": "x"}), "one"),
                                   (ChangeSet(edits={"a/s.yaml": lambda old: old + b"+v2"}),
                                    "two")], ("t", "t@e"))
    assert built.commit is not None and built.pack is not None
    assert not _packs(repo)  # staged under temporary names until the writer publishes it
    built.pack.publish()
    (pack,) = _packs(repo)
    stored = set(pack_ids(pack))
    assert git_hash(3, b"v1+v2") in stored and git_hash(3, b"x") in stored
    assert git_hash(3, b"v1") not in stored  # the intermediate version is not kept
    assert len(stored) == 5  # two blobs, two trees, the commit


def _tree_ids(repo: Path) -> list[str]:
    """Every tree object in ``repo``, as git lists them."""
    return [line.split()[0] for line in bare(repo, "rev-list", "--objects", "--all").splitlines()
            if bare(repo, "cat-file", "-t", line.split()[0]).strip() == "tree"]


def test_remembered_trees_match_what_was_written(tmp_path: Path) -> None:
    """Trees kept in memory for the next commit are exactly what git reads back."""
    repo = tmp_path / "r.git"
    w = RepoWriter(repo)
    w.apply(ChangeSet(writes={"a/b/c": "1", "a/d": "2", "e": "3", "x/y": "4"}), "one")
    w.apply(ChangeSet(writes={"a/b/f": "5"}, deletes={"x/y"}), "two")  # x/ becomes empty
    r = pygit2.Repository(str(repo))
    trees = _tree_ids(repo)
    assert len(trees) >= 6
    for tree in trees:
        remembered = _tree._PARSED.get(bytes.fromhex(tree))
        assert remembered is not None
        assert remembered == _tree._parse(r.odb.read(pygit2.Oid(hex=tree))[1])


def test_lines_of_a_tree_read_back_match_those_computed(tmp_path: Path) -> None:
    """A tree another process wrote is read with its lines as stored: exactly the lines (and
    order) this process remembers of the trees it computed, so an edit redoes only its own."""
    repo = tmp_path / "r.git"
    w = RepoWriter(repo)
    w.apply(ChangeSet(writes={"a/b/c": "1", "a/d": "2", "a.txt": "0", "a-b": "3",
                              "e": "3", "x/y": "4"}), "one")
    r = pygit2.Repository(str(repo))
    trees = _tree_ids(repo)
    assert len(trees) >= 4
    for tree in trees:
        computed = _tree._LINES.get(bytes.fromhex(tree))
        assert computed is not None
        assert _tree._parse_lines(r.odb.read(pygit2.Oid(hex=tree))[1])[1] == computed


def test_an_edit_of_a_tree_read_back_gives_the_tree_git_would(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget what this process computed (as another process would never have known it):
    the next commit, built from the lines read back, is one git accepts as is."""
    repo = tmp_path / "r.git"
    w = RepoWriter(repo)
    w.apply(ChangeSet(writes={f"d/f{i:03d}": str(i) for i in range(50)} | {"d/sub/x": "x"}),
            "many")
    monkeypatch.setattr(_tree, "_LINES", Recent(64))
    monkeypatch.setattr(_tree, "_PARSED", Recent(64))
    w.apply(ChangeSet(writes={"d/f010": "changed", "d/new": "n", "d/sub/y": "y"},
                      deletes={"d/f020"}), "edit")
    fsck_clean(repo)
    listing = bare(repo, "ls-tree", "-r", "--name-only", "main").split()
    assert "d/f020" not in listing and {"d/new", "d/sub/x", "d/sub/y"} <= set(listing)
    assert bare(repo, "show", "main:d/f010") == "changed"


def test_merging_copies_our_records_as_stored(tmp_path: Path) -> None:
    """Our packs hold whole objects: a merge copies their records byte for byte, and the
    merged pack is one git indexes exactly as we did."""
    repo = tmp_path / "r.git"
    w = RepoWriter(repo, max_small_packs=1000)
    for i in range(3):
        w.apply(ChangeSet(writes={f"f{i}": str(i) * 1000}), f"c{i}")
    before = {}
    for idx in _packs(repo):
        found = whole_records(idx)
        assert found is not None and sorted(found) == sorted(pack_ids(idx))
        before |= found
    assert merge_small_packs(pygit2.Repository(str(repo)), min_count=2) == 3
    (merged,) = _packs(repo)
    assert whole_records(merged) == before  # the same records, moved unchanged
    git("index-pack", "-o", tmp_path / "git.idx", merged.with_suffix(".pack"))
    assert (tmp_path / "git.idx").read_bytes() == merged.read_bytes()
    fsck_clean(repo)


def test_a_pack_git_wrote_with_deltas_is_merged_object_by_object(tmp_path: Path) -> None:
    """A pack from git (a push) may hold deltas, which cannot move alone: its objects are
    read whole and packed again, and none is lost."""
    repo = tmp_path / "r.git"
    w = RepoWriter(repo, max_small_packs=1000)
    for i in range(4):  # bigger than theirs, so the geometric rule merges every pack
        w.apply(ChangeSet(writes={f"ours{i}": os.urandom(4000).hex()}), f"ours{i}")
    work = tmp_path / "work"
    git("init", "-q", work)
    text = "".join(f"line {n}\n" for n in range(200))
    for i in range(3):
        (work / "big.txt").write_text(text + f"edit {i}\n")
        git("-C", work, "add", "big.txt")
        git("-C", work, "commit", "-q", "-m", f"v{i}")
    git("-C", work, "repack", "-a", "-d", "-f", "-q")
    (theirs,) = (work / ".git" / "objects" / "pack").glob("pack-*.idx")
    assert "chain length" in git("verify-pack", "-v", theirs)  # git stored deltas
    assert whole_records(theirs) is None
    for suffix in (".pack", ".idx"):
        target = repo / "objects" / "pack" / theirs.with_suffix(suffix).name
        target.write_bytes(theirs.with_suffix(suffix).read_bytes())
    wanted = pack_ids(theirs)
    assert merge_small_packs(pygit2.Repository(str(repo)), min_count=2) == 5
    (merged,) = _packs(repo)
    assert whole_records(merged) is not None and set(wanted) <= set(pack_ids(merged))
    for raw in wanted:
        assert bare(repo, "cat-file", "-e", raw.hex()) == ""
    fsck_clean(repo)
