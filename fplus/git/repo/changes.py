"""Change sets for a repository branch: what to write, delete and regenerate; validated paths."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

Edit = Callable[[bytes | None], bytes | str | None]
"""A read-modify-write of one file: current content (None if absent) → new (None deletes)."""


class InvalidPath(ValueError):
    """A path in a change set is not a safe, relative, normalised repository path."""


def validate_path(path: str) -> str:
    """Return ``path`` if it is a safe repository path, else raise :class:`InvalidPath`.

    Safe means: a non-empty relative path of non-empty segments, no ``.`` or ``..`` segment,
    no backslash or control character (NUL included), and no ``.git`` segment in any case
    (trailing dots and spaces ignored, as some file systems do).
    """
    if not isinstance(path, str) or not path:
        raise InvalidPath(f"empty or non-string path: {path!r}")
    if path.startswith("/"):
        raise InvalidPath(f"absolute path: {path!r}")
    if "\\" in path or any(ord(c) < 0x20 or c == "\x7f" for c in path):
        raise InvalidPath(f"backslash or control character in path: {path!r}")
    for segment in path.split("/"):
        if segment in ("", ".", ".."):
            raise InvalidPath(f"empty, '.' or '..' segment in path: {path!r}")
        if segment.lower().rstrip(". ") == ".git":
            raise InvalidPath(f"'.git' segment in path: {path!r}")
    return path


def _parents(path: str) -> Iterable[str]:
    parts = path.split("/")
    return ("/".join(parts[:i]) for i in range(1, len(parts)))


@dataclass(frozen=True)
class ChangeSet:
    """One atomic change to a branch, applied in this order.

    ``replace_dirs``: directories whose existing content is removed first (so a directory can be
    regenerated wholesale while its siblings, e.g. ``by-hand/``, stay); ``deletes``: exact file
    paths to remove (missing ones are ignored); ``writes``: path → content (``str`` is encoded
    as UTF-8); ``edits``: path → function of the file's current content (None when absent)
    returning its new content (None deletes the file). Edits run inside the batch, on the
    branch as the change sets before this one left it, so concurrent read-modify-writes of one
    file compose instead of overwriting each other; if an edit raises, this change set is left
    out and its caller gets the exception. All paths are validated on construction, before
    anything touches a repository.
    """

    writes: Mapping[str, bytes | str] = field(default_factory=dict)
    deletes: Iterable[str] = frozenset()
    replace_dirs: Iterable[str] = frozenset()
    edits: Mapping[str, Edit] = field(default_factory=dict)
    always_commit: bool = False
    """Commit even when the tree comes out unchanged (a forced redeploy: a new revision)."""

    def __post_init__(self) -> None:
        writes = {validate_path(p): _as_bytes(p, c) for p, c in dict(self.writes).items()}
        deletes = frozenset(validate_path(p) for p in _paths(self.deletes))
        replace = frozenset(validate_path(p) for p in _paths(self.replace_dirs))
        edits = {validate_path(p): fn for p, fn in dict(self.edits).items()}
        both = deletes & writes.keys()
        if both:
            raise InvalidPath(f"paths both written and deleted: {sorted(both)}")
        touched = sorted(p for p in edits if p in writes or p in deletes
                         or any(d in replace for d in _parents(p)))
        if touched:
            raise InvalidPath(f"edited paths also written, deleted or replaced: {touched}")
        if not all(callable(fn) for fn in edits.values()):
            raise TypeError("edits must map paths to functions")
        clash = sorted(p for w in writes for p in _parents(w) if p in writes)
        if clash:
            raise InvalidPath(f"paths written both as file and as directory: {clash}")
        object.__setattr__(self, "writes", MappingProxyType(writes))
        object.__setattr__(self, "deletes", deletes)
        object.__setattr__(self, "replace_dirs", replace)
        object.__setattr__(self, "edits", MappingProxyType(edits))

    def __bool__(self) -> bool:
        return bool(self.writes or self.deletes or self.replace_dirs or self.edits
                    or self.always_commit)


@dataclass(frozen=True)
class WriteResult:
    """Outcome of ``apply``: the branch head after it, and whether this change set altered it.

    ``commit`` is ``None`` only when the branch does not exist (nothing was ever written).
    A change batched with others gets the batch's commit even if its own part was a no-op.
    """

    commit: str | None
    changed: bool


def _paths(paths: Iterable[str]) -> Iterable[str]:
    if isinstance(paths, str):
        raise InvalidPath(f"expected a collection of paths, got the string {paths!r}")
    return paths


def edited_content(path: str, content: bytes | str | None) -> bytes | None:
    """An edit function's result as bytes (None: delete the file)."""
    return None if content is None else _as_bytes(path, content)


def _as_bytes(path: str, content: bytes | str) -> bytes:
    if isinstance(content, str):
        return content.encode("utf-8")
    if isinstance(content, bytes | bytearray | memoryview):
        return bytes(content)
    raise TypeError(f"content for {path!r} must be bytes or str, not {type(content).__name__}")
