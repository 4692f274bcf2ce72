"""In-memory editing of a git tree: subtrees load lazily, only edited directories are rehashed,
new objects are collected (not written) for one pack, and the root's id after each edit tells
whether anything really changed."""

from __future__ import annotations

import hashlib
from bisect import bisect_left, insort

import pygit2

from fplus.git.repo._pack import RawObject
from fplus.git.repo._recent import Recent

TREE_MODE = b"40000"
FILE_MODE = b"100644"
EXEC_MODE = b"100755"

Leaf = tuple[bytes, pygit2.Oid]  # (octal mode as git writes it, object id)


class _Dir:
    """One directory: entries name → leaf or loaded subdirectory."""

    __slots__ = ("_base", "_body", "_entries", "_oid", "_repo", "_stored", "_touched")

    def __init__(self, repo: pygit2.Repository, oid: pygit2.Oid | None) -> None:
        self._repo = repo
        self._oid = oid  # id of the current content, None when it must be recomputed
        self._stored = oid is not None  # whether that content is known to be in the odb
        self._body: bytes | None = None
        self._entries: dict[bytes, Leaf | _Dir] | None = None if oid else {}
        self._base = oid.raw if oid else None  # the last id computed, whose lines are known
        self._touched: set[bytes] = set()  # names edited since

    @property
    def entries(self) -> dict[bytes, Leaf | _Dir]:
        if self._entries is None:
            assert self._oid is not None
            parsed = _PARSED.get(self._oid.raw)
            if parsed is None:
                parsed, lines = _parse_lines(self._repo.odb.read(self._oid)[1])
                _PARSED.put(self._oid.raw, parsed)
                if _LINES.get(self._oid.raw) is None:  # a tree another process wrote
                    _LINES.put(self._oid.raw, lines)
            self._entries = dict(parsed)  # ours to edit; the remembered one never changes
        return self._entries

    def child(self, name: bytes, create: bool) -> _Dir | None:
        """The subdirectory ``name``; with ``create``, a file or nothing there becomes one."""
        entry = self.entries.get(name)
        if isinstance(entry, _Dir):
            return entry
        if entry is not None and entry[0] == TREE_MODE:
            sub = self.entries[name] = _Dir(self._repo, entry[1])
            return sub
        if not create:
            return None
        sub = self.entries[name] = _Dir(self._repo, None)
        return sub

    def invalidate(self) -> None:
        self._oid, self._stored, self._body = None, False, None

    def touch(self, name: bytes) -> None:
        """``name`` was added, changed or removed (its line is computed again)."""
        self._touched.add(name)

    def digest(self) -> tuple[pygit2.Oid, bool]:
        """(tree id, whether empty) of the current content, computed without writing."""
        if self._oid is None:
            keys, lines = self._lines()
            body = b"".join(map(lines.__getitem__, keys))
            self._body = body
            raw = hashlib.sha1(b"tree %d\x00" % len(body) + body, usedforsecurity=False).digest()
            self._oid = pygit2.Oid(raw=raw)
            _LINES.put(raw, (keys, lines))
            self._base, self._touched = raw, set()
        return self._oid, self._oid == EMPTY_TREE

    def _lines(self) -> tuple[list[bytes], dict[bytes, bytes]]:
        """The entries' lines by sort key, and those keys in git's order: the last
        computed ones with the touched names redone, or all of them afresh."""
        known = _LINES.get(self._base) if self._base is not None else None
        if known is None:
            keys, lines = [], {}
            for key, name, entry in sorted((_key(n, e), n, e) for n, e in self.entries.items()):
                line = _serialise(name, entry)
                if line:  # an empty directory has none
                    keys.append(key)
                    lines[key] = line
            return keys, lines
        keys, lines = list(known[0]), dict(known[1])  # the remembered ones never change
        for name in self._touched:
            for key in (name, name + b"/"):
                if lines.pop(key, None) is not None:
                    del keys[bisect_left(keys, key)]
            now = self.entries.get(name)
            line = _serialise(name, now) if now is not None else b""
            if now is not None and line:
                key = _key(name, now)
                insort(keys, key)
                lines[key] = line
        return keys, lines

    def collect(self, sink: dict[bytes, RawObject], leaves: set[bytes]) -> pygit2.Oid:
        """Add this directory and every edited one below it to ``sink``, and the ids of the
        files they hold to ``leaves``; return its id."""
        oid, _ = self.digest()
        if not self._stored:
            written: dict[bytes, Leaf | _Dir] = {}  # the tree as _parse would read it back
            for name, entry in self.entries.items():
                if isinstance(entry, _Dir):
                    if not entry.digest()[1]:
                        written[name] = (TREE_MODE, entry.collect(sink, leaves))
                else:
                    leaves.add(entry[1].raw)
                    written[name] = entry
            sink[oid.raw] = (TREE_TYPE, self._body or b"")
            _PARSED.put(oid.raw, written)  # the next commit edits this tree: no re-parse
            self._stored, self._body = True, None
        return oid


TREE_TYPE, BLOB_TYPE = 2, 3
_PARSED: Recent[bytes, dict[bytes, Leaf | _Dir]] = Recent(64)
"""Entries of recently read or written trees by id (a tree's id fixes its content)."""
_LINES: Recent[bytes, tuple[list[bytes], dict[bytes, bytes]]] = Recent(64)
"""Trees computed here by id: their entries' lines by sort key and the keys in order, so the
next edit of a large directory redoes only the lines it changed."""
_BLOBS: Recent[bytes, bytes] = Recent(2048)
"""Small files recently written, by id: the next edit of one (a secret's next key) reads it
from here, not through the pack indexes."""
SMALL_BLOB = 8 * 1024
"""Bytes a file may have to be remembered in :data:`_BLOBS` (at most 16 MiB in all)."""
EMPTY_TREE = pygit2.Oid(hex="4b825dc642cb6eb9a060e54bf8d69288fbee4904")


class MutableTree:
    """A branch tree being edited; ``digest()`` is cheap, ``finish()`` yields the new objects."""

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Oid | None) -> None:
        self._repo = repo
        self._root = _Dir(repo, tree)
        self._blobs: dict[bytes, RawObject] = {}

    def digest(self) -> pygit2.Oid:
        return self._root.digest()[0]

    def finish(self) -> tuple[pygit2.Oid, dict[bytes, RawObject]]:
        """The root tree id and the objects (blobs, trees) it needs that are not stored yet.

        A file edited twice in one batch staged two blobs; only the one the tree ends up
        holding is returned.
        """
        objects: dict[bytes, RawObject] = {}
        leaves: set[bytes] = set()
        root = self._root.collect(objects, leaves)
        for raw, blob in self._blobs.items():
            if raw in leaves:
                objects[raw] = blob
                if len(blob[1]) <= SMALL_BLOB:
                    _BLOBS.put(raw, blob[1])
        return root, objects

    def put(self, path: str, data: bytes) -> bool:
        """Write a file (an executable bit already set on it is kept); False if already so."""
        *dirs, name = [p.encode() for p in path.split("/")]
        chain = [self._root]
        for part in dirs:
            chain.append(chain[-1].child(part, create=True))  # type: ignore[arg-type]
        oid = pygit2.hash(data)
        old = chain[-1].entries.get(name)
        mode = old[0] if isinstance(old, tuple) and old[0] == EXEC_MODE else FILE_MODE
        if old == (mode, oid):
            return False
        self._blobs[oid.raw] = (BLOB_TYPE, data)
        chain[-1].entries[name] = (mode, oid)
        _touched(chain, [*dirs, name])
        return True

    def read(self, path: str) -> bytes | None:
        """A file's current content (including edits so far), or None if no such file."""
        *dirs, name = [p.encode() for p in path.split("/")]
        node: _Dir | None = self._root
        for part in dirs:
            node = node.child(part, create=False) if node is not None else None
        entry = node.entries.get(name) if node is not None else None
        if not isinstance(entry, tuple) or entry[0] not in (FILE_MODE, EXEC_MODE):
            return None
        staged = self._blobs.get(entry[1].raw)
        if staged:
            return staged[1]
        return _BLOBS.get(entry[1].raw) or self._repo[entry[1]].read_raw()

    def delete(self, path: str) -> bool:
        """Remove a file (or symlink/submodule entry); missing paths and directories are left."""
        return self._remove(path, want_dir=False)

    def remove_dir(self, path: str) -> bool:
        """Remove a directory and everything under it; missing paths and files are left."""
        return self._remove(path, want_dir=True)

    def _remove(self, path: str, want_dir: bool) -> bool:
        *dirs, name = [p.encode() for p in path.split("/")]
        chain = [self._root]
        for part in dirs:
            sub = chain[-1].child(part, create=False)
            if sub is None:
                return False
            chain.append(sub)
        entry = chain[-1].entries.get(name)
        if entry is None:
            return False
        is_dir = isinstance(entry, _Dir) or entry[0] == TREE_MODE
        if is_dir != want_dir:
            return False
        del chain[-1].entries[name]
        _touched(chain, [*dirs, name])
        return True


def _parse_lines(body: bytes) -> tuple[dict[bytes, Leaf | _Dir],
                                       tuple[list[bytes], dict[bytes, bytes]]]:
    """:func:`_parse`, and the tree's lines by sort key with those keys in git's order (what
    :meth:`_Dir.digest` remembers of a tree it computed): the lines as stored, so editing a
    tree this process did not write redoes only the lines it changes."""
    entries: dict[bytes, Leaf | _Dir] = {}
    keys: list[bytes] = []
    lines: dict[bytes, bytes] = {}
    pos = 0
    while pos < len(body):
        space = body.index(b" ", pos)
        nul = body.index(b"\x00", space)
        mode, name = body[pos:space], body[space + 1:nul]
        entries[name] = (mode, pygit2.Oid(raw=body[nul + 1:nul + 21]))
        key = name + b"/" if mode == TREE_MODE else name
        keys.append(key)
        lines[key] = body[pos:nul + 21]
        pos = nul + 21
    return entries, (keys, lines)


def _parse(body: bytes) -> dict[bytes, Leaf | _Dir]:
    """A tree object's entries: name → (mode, id)."""
    return _parse_lines(body)[0]


def _touched(chain: list[_Dir], names: list[bytes]) -> None:
    """Each directory of ``chain`` changed in its entry ``names[i]`` (the next one down, or
    the edited name itself)."""
    for node, name in zip(chain, names, strict=True):
        node.touch(name)
        node.invalidate()


def _key(name: bytes, entry: Leaf | _Dir) -> bytes:
    """Git orders a tree's entries by name, a directory's as if it ended in ``/``."""
    return name + b"/" if isinstance(entry, _Dir) or entry[0] == TREE_MODE else name


def _serialise(name: bytes, entry: Leaf | _Dir) -> bytes:
    if isinstance(entry, _Dir):
        oid, empty = entry.digest()
        if empty:
            return b""  # git has no empty directories
        return TREE_MODE + b" " + name + b"\x00" + oid.raw
    return entry[0] + b" " + name + b"\x00" + entry[1].raw
