"""Change sets for a repository branch: what to write, delete and regenerate; validated paths."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


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
    as UTF-8). All paths are validated on construction, before anything touches a repository.
    """

    writes: Mapping[str, bytes | str] = field(default_factory=dict)
    deletes: Iterable[str] = frozenset()
    replace_dirs: Iterable[str] = frozenset()

    def __post_init__(self) -> None:
        writes = {validate_path(p): _as_bytes(p, c) for p, c in dict(self.writes).items()}
        deletes = frozenset(validate_path(p) for p in _paths(self.deletes))
        replace = frozenset(validate_path(p) for p in _paths(self.replace_dirs))
        both = deletes & writes.keys()
        if both:
            raise InvalidPath(f"paths both written and deleted: {sorted(both)}")
        clash = sorted(p for w in writes for p in _parents(w) if p in writes)
        if clash:
            raise InvalidPath(f"paths written both as file and as directory: {clash}")
        object.__setattr__(self, "writes", MappingProxyType(writes))
        object.__setattr__(self, "deletes", deletes)
        object.__setattr__(self, "replace_dirs", replace)

    def __bool__(self) -> bool:
        return bool(self.writes or self.deletes or self.replace_dirs)


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


def _as_bytes(path: str, content: bytes | str) -> bytes:
    if isinstance(content, str):
        return content.encode("utf-8")
    if isinstance(content, bytes | bytearray | memoryview):
        return bytes(content)
    raise TypeError(f"content for {path!r} must be bytes or str, not {type(content).__name__}")
