"""Read files at a ref straight from a bare repository: cheap enough for every HTTP request."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pygit2

from fplus.git.repo._registry import ProcessRegistry
from fplus.git.repo.changes import validate_path
from fplus.git.repo.writer import open_repository


class _Cached:
    __slots__ = ("lock", "repo")

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo, self.lock = repo, threading.Lock()


_cache: ProcessRegistry[str, _Cached] = ProcessRegistry()


def _repository(repo_path: Path) -> _Cached | None:
    """The cached Repository for ``repo_path`` (misses are not cached: it may appear later)."""
    key = os.path.abspath(repo_path)
    try:
        return _cache.get(key, lambda: _Cached(open_repository(Path(key))))
    except pygit2.GitError:
        return None


def _forget(repo_path: Path) -> None:
    _cache.forget(os.path.abspath(repo_path))


def _tree(repo: pygit2.Repository, ref: str) -> pygit2.Tree | None:
    try:
        return repo.revparse_single(ref).peel(pygit2.Tree)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None


def head(repo_path: Path, ref: str = "refs/heads/main") -> str | None:
    """The commit ``ref`` points at; None if the repo or the ref does not exist."""
    cached = _repository(repo_path)
    if cached is None:
        return None
    with cached.lock:
        try:
            return str(cached.repo.revparse_single(ref).peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            return None


def branches(repo_path: Path) -> dict[str, str]:
    """``{branch: sha}`` of every local branch (the repo opened afresh, not cached)."""
    repo = open_repository(repo_path)
    return {name: str(repo.branches.local[name].target) for name in repo.branches.local}


def read_file(repo_path: Path, path: str, ref: str = "refs/heads/main") -> bytes | None:
    """Content of ``path`` at ``ref``; None if the repo, ref or file does not exist.

    ``ref`` is anything ``git rev-parse`` accepts (full ref, branch name, commit id).
    Raises :class:`~fplus.git.repo.changes.InvalidPath` for an unsafe path.
    """
    validate_path(path)
    cached = _repository(repo_path)
    if cached is None:
        return None
    with cached.lock:
        try:
            tree = _tree(cached.repo, ref)
            if tree is None:
                return None
            try:
                obj = tree[path]
            except KeyError:
                return None
            return obj.data if isinstance(obj, pygit2.Blob) else None
        except pygit2.GitError:
            _forget(repo_path)  # e.g. the repository was deleted underneath us
            return None


def list_files(repo_path: Path, prefix: str = "", ref: str = "refs/heads/main") -> list[str]:
    """Sorted paths of all files under directory ``prefix`` ("" = whole tree) at ``ref``."""
    prefix = prefix.strip("/")
    if prefix:
        validate_path(prefix)
    cached = _repository(repo_path)
    if cached is None:
        return []
    with cached.lock:
        try:
            tree = _tree(cached.repo, ref)
            if tree is None:
                return []
            if prefix:
                try:
                    node = tree[prefix]
                except KeyError:
                    return []
                if not isinstance(node, pygit2.Tree):
                    return [prefix]
                tree = node
            return sorted(_walk(tree, prefix))
        except pygit2.GitError:
            _forget(repo_path)
            return []


def _walk(tree: pygit2.Tree, base: str) -> list[str]:
    out: list[str] = []
    for entry in tree:
        path = f"{base}/{entry.name}" if base else str(entry.name)
        if isinstance(entry, pygit2.Tree):
            out.extend(_walk(entry, path))
        else:
            out.append(path)
    return out


def read_files(repo_path: Path, prefix: str = "", ref: str = "refs/heads/main",
               keep: Callable[[str], bool] | None = None) -> dict[str, bytes]:
    """Every file under directory ``prefix`` at ``ref`` (only those whose path ``keep``
    accepts, when given; the others are never read): path → content."""
    return {p: data for p in list_files(repo_path, prefix, ref) if keep is None or keep(p)
            if (data := read_file(repo_path, p, ref)) is not None}


@dataclass(frozen=True)
class CommitInfo:
    """One commit as a history shows it: never a file's content."""

    sha: str
    time: float
    """The committer's time, seconds since the epoch."""
    author: str
    message: str
    parents: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    """The files the commit changed against its first parent (filled by :func:`commit_info`
    only)."""

    @property
    def summary(self) -> str:
        """The message's first line."""
        return self.message.split("\n", 1)[0]


def _info(commit: pygit2.Commit, paths: tuple[str, ...] = ()) -> CommitInfo:
    return CommitInfo(str(commit.id), float(commit.commit_time), str(commit.author.name),
                      str(commit.message), tuple(str(p) for p in commit.parent_ids), paths)


def history(repo_path: Path, ref: str = "refs/heads/main", limit: int = 20) -> list[CommitInfo]:
    """The newest ``limit`` commits reachable from ``ref``, newest first ([]: no such repo
    or ref)."""
    cached = _repository(repo_path)
    if cached is None:
        return []
    with cached.lock:
        try:
            start = cached.repo.revparse_single(ref).peel(pygit2.Commit)
            walker = cached.repo.walk(start.id, pygit2.enums.SortMode.TOPOLOGICAL
                                      | pygit2.enums.SortMode.TIME)
            return [_info(c) for c, _ in zip(walker, range(limit), strict=False)]
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            return []


def commit_info(repo_path: Path, sha: str, ref: str = "refs/heads/main") -> CommitInfo | None:
    """The commit ``sha`` (40 hex digits) with the paths it changed, if ``ref`` reaches it
    (None otherwise: a commit of another branch or repo is not shown)."""
    if len(sha) != 40 or any(c not in "0123456789abcdef" for c in sha):
        return None
    cached = _repository(repo_path)
    if cached is None:
        return None
    with cached.lock:
        repo = cached.repo
        try:
            tip = repo.revparse_single(ref).peel(pygit2.Commit)
            commit = repo.get(sha)
            if not isinstance(commit, pygit2.Commit) or not (
                    commit.id == tip.id or repo.descendant_of(tip.id, commit.id)):
                return None
            parent = commit.parents[0].tree if commit.parents else None
            diff = (repo.diff(parent, commit.tree) if parent is not None
                    else commit.tree.diff_to_tree(swap=True))
            paths = tuple(sorted({d.delta.new_file.path for d in diff}))
            return _info(commit, paths)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            return None
