"""Turn a batch of change sets into one commit, its objects one pack under temporary names
(the writer publishes it with the ref)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pygit2

from fplus.git.repo._pack import StagedPack, git_hash, stage_pack
from fplus.git.repo._recent import Recent
from fplus.git.repo._tree import EMPTY_TREE, MutableTree
from fplus.git.repo.changes import ChangeSet, WriteResult, edited_content
from fplus.serving.background import offload

Pending = tuple[ChangeSet, str]  # a change set and its commit message
Outcome = bool | Exception  # whether a change set mattered, or why it was left out
COMMIT_TYPE = 1
_TREES: Recent[str, pygit2.Oid] = Recent(256)
"""Root tree of the commits built here, by commit id: the next commit on top of one needs
no object lookup to start from it."""


@dataclass(frozen=True)
class Built:
    """The new commit (None: the tree did not change) and, per change set, its outcome."""

    commit: str | None
    changed: list[Outcome]
    parent: str | None = None
    """The commit it was built on (None: the first)."""
    pack: StagedPack | None = None
    """The new commit's objects, not yet published (:meth:`StagedPack.publish`)."""

    def results(self, head: str | None) -> list[WriteResult | Exception]:
        """Per change set: its result at ``head`` (the new commit or the unchanged parent)."""
        return [c if isinstance(c, Exception) else WriteResult(head, c) for c in self.changed]


def build_commit(repo: pygit2.Repository, parent: str | None, batch: Sequence[Pending],
                 author: tuple[str, str], *, fsync: bool = True) -> Built:
    """Apply ``batch`` in order onto ``parent``'s tree; stage one commit's pack if anything
    changed (``fsync``: its files on disk before this returns; else the caller syncs)."""
    base = _tree_of(repo, parent) if parent else EMPTY_TREE
    tree = MutableTree(repo, None if base == EMPTY_TREE else base)
    changed = [_apply(tree, changes) for changes, _ in batch]
    forced = [changes.always_commit and not isinstance(c, Exception)
              for (changes, _), c in zip(batch, changed, strict=True)]
    if tree.digest() == base and not any(forced):
        return Built(None, [c if isinstance(c, Exception) else False for c in changed], parent)
    changed = [True if force else c for force, c in zip(forced, changed, strict=True)]
    messages = [msg for (_, msg), did in zip(batch, changed, strict=True) if did is True]
    tree_id, objects = tree.finish()
    body = commit_object(str(tree_id), [parent] if parent else [], author,
                         commit_message(messages))
    commit = git_hash(COMMIT_TYPE, body)
    objects[commit] = (COMMIT_TYPE, body)
    _TREES.put(commit.hex(), tree_id)
    # file-system work (writes, fsyncs): off the gevent hub, which meanwhile parses the
    # requests that will make up the next batch
    pack = offload.run(partial(stage_pack, fsync=fsync), Path(repo.path) / "objects" / "pack",
                       objects)
    return Built(commit.hex(), changed, parent, pack)


def _tree_of(repo: pygit2.Repository, commit: str) -> pygit2.Oid:
    """The root tree id of ``commit``."""
    tree = _TREES.get(commit)
    if tree is None:
        tree = repo[commit].peel(pygit2.Commit).tree_id
        _TREES.put(commit, tree)
    return tree


def _apply(tree: MutableTree, changes: ChangeSet) -> Outcome:
    """Apply one change set; whether it changed the tree (or the exception an edit raised,
    in which case nothing of it was applied)."""
    try:  # edited paths are disjoint from everything else the set touches: compute them first
        edited = {p: edited_content(p, fn(tree.read(p))) for p, fn in changes.edits.items()}
    except Exception as exc:
        return exc
    if not changes.replace_dirs:
        return _edit(tree, changes, edited)
    before = tree.digest()  # a regenerated directory may well come out the same: compare ids
    for path in sorted(changes.replace_dirs):
        tree.remove_dir(path)
    _edit(tree, changes, edited)
    return tree.digest() != before


def _edit(tree: MutableTree, changes: ChangeSet, edited: dict[str, bytes | None]) -> bool:
    """Deletes, then writes. Paths are distinct and writes never clash file-vs-directory, so
    any effective edit is a change of the tree."""
    changed = False
    for path in sorted(changes.deletes):
        changed |= tree.delete(path)
    for path, data in changes.writes.items():
        assert isinstance(data, bytes)  # a ChangeSet encodes its str writes when made
        changed |= tree.put(path, data)
    for path, content in edited.items():
        changed |= tree.delete(path) if content is None else tree.put(path, content)
    return changed


def commit_object(tree: str, parents: list[str], author: tuple[str, str], message: str) -> bytes:
    """The raw commit object, author = committer = ``(name, email)`` at the local time now."""
    now = time.time()
    offset = time.localtime(now).tm_gmtoff
    sign = "-" if offset < 0 else "+"
    ident = f"{author[0]} <{author[1]}> {int(now)} {sign}{abs(offset) // 3600:02}" \
            f"{abs(offset) % 3600 // 60:02}"
    lines = [f"tree {tree}", *(f"parent {p}" for p in parents),
             f"author {ident}", f"committer {ident}", "", message]
    return "\n".join(lines).encode()


def check_identity(name: str, email: str) -> None:
    """Refuse an author name or email that would corrupt the commit header."""
    for value in (name, email):
        if not value or any(c in value for c in "<>\n\x00"):
            raise ValueError(f"invalid author name or email: {value!r}")


def commit_message(messages: Sequence[str]) -> str:
    """One message as is; several as a summary line followed by each message."""
    if len(messages) == 1:
        return _terminated(messages[0])
    parts = [f"Apply {len(messages)} changes", *(m.strip() for m in messages)]
    return _terminated("\n\n".join(parts))


def _terminated(message: str) -> str:
    message = message.strip() or "Update"
    return message + "\n"
