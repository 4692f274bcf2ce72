"""Bare repos as ``git bundle`` files, and back (the Git server's storage,
:mod:`fplus.git.bare`'s layout: ``<repos>/<uuid>.git``).

A repo without any ref (created, never written) has no bundle: the manifest lists it with
no refs and a restore creates it empty.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from fplus.git import bare
from fplus.jsontypes import is_object, string_map

from .directory import REPOS, BackupError, RepoTaken


def _git(*args: str, umask: int = -1) -> str:
    """Run git; ``umask`` for what it creates (-1: ours)."""
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1",
               GIT_CONFIG_GLOBAL=os.devnull)
    done = subprocess.run(["git", *args], env=env, capture_output=True, text=True,
                          check=False, umask=umask)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        raise BackupError(f"git {args[0]} {args[1] if len(args) > 1 else ''}: {lines[-1]}")
    return done.stdout


def _refs(repo: Path) -> dict[str, str]:
    out = _git("--git-dir", str(repo), "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ", 1) for line in out.splitlines() if line)


def bundle_all(repos_dir: Path, out: Path) -> dict[str, RepoTaken]:
    """Bundle every repo under ``repos_dir`` into ``out/repos/<uuid>.bundle``; returns
    ``{uuid: {"refs": {ref: sha}}}`` for the manifest. Each bundle is created 0600 (git
    runs with umask 077)."""
    if not repos_dir.is_dir():
        raise BackupError(f"--git-repos {repos_dir}: no such directory (the Git server's "
                          "DATA_DIR/repos)")
    taken: dict[str, RepoTaken] = {}
    (out / REPOS).mkdir(parents=True, exist_ok=True, mode=0o700)
    for uuid in bare.stored(repos_dir):
        repo = bare.repo_path(repos_dir, uuid)
        refs = _refs(repo)
        if refs:
            _git("--git-dir", str(repo), "bundle", "create", "--quiet",
                 str(out / REPOS / f"{uuid}.bundle"), *sorted(refs), umask=0o077)
        taken[uuid] = {"refs": refs}
    return taken


def check(root: Path, repos: object) -> dict[str, dict[str, str]]:
    """The manifest's repos, each bundle listing exactly the refs the manifest names;
    BackupError otherwise (nothing written)."""
    if not is_object(repos) or not all(bare.is_repo_uuid(u) for u in repos):
        raise BackupError("manifest: repos must map repo uuids to their refs")
    checked: dict[str, dict[str, str]] = {}
    for uuid, entry in repos.items():
        refs = entry.get("refs") if is_object(entry) else None
        if not is_object(refs):
            raise BackupError(f"manifest: repo {uuid} has no refs")
        if refs:
            heads = _git("bundle", "list-heads", str(root / REPOS / f"{uuid}.bundle"))
            listed = {ref: sha for sha, ref in (line.split(" ", 1)
                                                for line in heads.splitlines() if line)}
            if listed != refs:
                raise BackupError(f"repos/{uuid}.bundle does not hold the refs the manifest "
                                  "lists")
        checked[uuid] = string_map(refs)  # equal to the bundle's refs: all strings
    return checked


def foreign(repos_dir: Path, allowed: frozenset[str]) -> list[str]:
    """The repos under ``repos_dir`` but ``allowed`` (the shared repos a fresh stack
    makes): a target holding any is not empty."""
    if not repos_dir.is_dir():
        return []
    return [u for u in bare.stored(repos_dir) if u not in allowed]


def restore(root: Path, repos_dir: Path, repos: dict[str, dict[str, str]]) -> None:
    """Create each repo (or take an existing shared one) and set its refs from its bundle."""
    for uuid, refs in sorted(repos.items()):
        repo = bare.create(bare.repo_path(repos_dir, uuid))
        if refs:
            _git("--git-dir", str(repo), "fetch", "--quiet", "--force", "--no-tags",
                 str(root / REPOS / f"{uuid}.bundle"), *(f"+{r}:{r}" for r in sorted(refs)))
            current = _refs(repo)
            if any(current.get(ref) != sha for ref, sha in refs.items()):
                raise BackupError(f"repo {uuid}: its refs differ from the backup after the "
                                  "fetch")
