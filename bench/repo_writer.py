"""Repo writer benchmark: N single-file commits to one branch; prints one JSON object.

Compares, in the same run:
- ours: the shared RepoWriter, ``--writers`` threads, batched group commits into a bare repo;
- ACS pattern: per change ``git clone --depth 1`` → write → ``git commit`` → ``git push`` over
  smart HTTP with the same concurrency, ``git pull --rebase`` and push again when rejected;
- floor: one pygit2 commit per change, single thread, no batching, no server.

The ACS pattern runs against this project's Git server (with its Config Store, started here
on free ports) unless ``--git-url`` names a repository (credentials may be embedded:
``http://user:pass@host/git/group/name``).

Usage: ``python bench/repo_writer.py [--changes 400] [--writers 16] [--acs-changes 64]``
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pygit2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fplus.config_store import uuids
from fplus.git.repo import ChangeSet, RepoWriter
from harness.gitcli import GIT_ENV
from harness.servers import ADMIN_PASSWORD, Api, ServiceProcess, git_server_process


def _cpu_seconds() -> float:
    """CPU of this process and of its reaped children (git subprocesses)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _ours(root: Path, changes: int, writers: int) -> tuple[float, int, float]:
    """(ops/s, commits, CPU ms per op) for ``changes`` single-file applies from ``writers``
    threads."""
    writer = RepoWriter(root / f"ours-{writers}.git")
    writer.apply(ChangeSet(writes={"README.md": "seed\n"}), "seed")
    counter = itertools.count()

    def work() -> None:
        while (i := next(counter)) < changes:
            writer.apply(ChangeSet(writes={f"bench/{i:05}.txt": f"change {i}\n"}), f"change {i}")

    start, cpu = time.perf_counter(), _cpu_seconds()
    threads = [threading.Thread(target=work) for _ in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
    repo = pygit2.Repository(str(writer.repo_path))
    commits = sum(1 for _ in repo.walk(repo.references["refs/heads/main"].target)) - 1
    return changes / elapsed, commits, cpu * 1000 / changes


def _floor(root: Path, changes: int) -> float:
    """One plain pygit2 commit per change: blob, two tree levels, commit moving the ref."""
    repo = pygit2.init_repository(root / "floor.git", bare=True, initial_head="main")
    sig = pygit2.Signature("bench", "bench@localhost")
    seed = repo.TreeBuilder()
    seed.insert("README.md", repo.create_blob(b"seed\n"), pygit2.enums.FileMode.BLOB)
    parent = repo.create_commit("refs/heads/main", sig, sig, "seed", seed.write(), [])
    start = time.perf_counter()
    for i in range(changes):
        tree = repo[parent].peel(pygit2.Commit).tree
        sub = repo.TreeBuilder(tree["bench"]) if "bench" in tree else repo.TreeBuilder()
        sub.insert(f"{i:05}.txt", repo.create_blob(f"change {i}\n".encode()),
                   pygit2.enums.FileMode.BLOB)
        top = repo.TreeBuilder(tree)
        top.insert("bench", sub.write(), pygit2.enums.FileMode.TREE)
        parent = repo.create_commit("refs/heads/main", sig, sig, f"change {i}", top.write(),
                                    [parent])
    return changes / (time.perf_counter() - start)


def _git(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *map(str, args)], cwd=cwd, env=os.environ | GIT_ENV,
                          capture_output=True, text=True, check=False)


def _acs_change(url: str, work: Path, i: int) -> int:
    """Clone, commit one file, push (pull --rebase and push again on rejection); retries."""
    clone = _git("clone", "-q", "--depth", "1", "--branch", "main", url, work)
    if clone.returncode:
        raise RuntimeError(clone.stderr)
    (work / "bench").mkdir(exist_ok=True)
    (work / "bench" / f"acs-{i:05}.txt").write_text(f"change {i}\n")
    _git("add", "-A", cwd=work)
    _git("commit", "-q", "-m", f"change {i}", cwd=work)
    for retries in range(100):
        push = _git("push", "-q", "origin", "main", cwd=work)
        if push.returncode == 0:
            return retries
        if "rejected" not in push.stderr and "failed to push" not in push.stderr:
            raise RuntimeError(push.stderr)
        _git("pull", "-q", "--rebase", "origin", "main", cwd=work)
    raise RuntimeError(f"change {i}: push kept failing")


def _acs(url: str, root: Path, changes: range, writers: int) -> tuple[float, int]:
    """(ops/s, push retries) of the clone-commit-push pattern."""
    start = time.perf_counter()
    with ThreadPoolExecutor(writers) as pool:
        retries = sum(pool.map(lambda i: _acs_change(url, root / f"acs-{i}", i), changes))
    return len(changes) / (time.perf_counter() - start), retries


def _acs_both(args: argparse.Namespace, url: str, root: Path) -> tuple[float, int, float]:
    """ACS pattern at ``--writers`` concurrency, then uncontended (one writer)."""
    acs, retries = _acs(url, root, range(args.acs_changes), args.writers)
    single = _acs(url, root, range(args.acs_changes, args.acs_changes + args.acs_single_changes),
                  1)[0] if args.acs_single_changes else 0.0
    return acs, retries, single


@contextlib.contextmanager
def _our_git_server(root: Path) -> Iterator[str]:
    """A Config Store and Git server with one configured, seeded repo; yields its URL."""
    store = ServiceProcess(root / "cs").start()
    git = git_server_process(root / "git", store.url).start()
    try:
        admin = Api(store.url, ("admin", ADMIN_PASSWORD))
        klass = admin.post("/v2/object", json={"class": uuids.Class.R1Class}).json()["uuid"]
        repo = admin.post("/v2/object", json={"class": klass}).json()["uuid"]
        admin.put(f"/v2/app/{uuids.App.GitRepoConfig}/object/{repo}", json={"path": "bench/acs"})
        RepoWriter(root / "git" / "repos" / f"{repo}.git").apply(
            ChangeSet(writes={"README.md": "seed\n"}), "seed")
        yield f"http://admin:{ADMIN_PASSWORD}@127.0.0.1:{git.port}/uuid/{repo}"
    finally:
        git.stop()
        store.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--changes", type=int, default=400)
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--acs-changes", type=int, default=64)
    parser.add_argument("--acs-single-changes", type=int, default=8,
                        help="changes for the uncontended (1 writer) ACS figure; 0 skips it")
    parser.add_argument("--git-url", help="repository for the ACS pattern (default: throwaway)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ops, commits, cpu_ms = _ours(root, args.changes, args.writers)
        ops_single, _, cpu_ms_single = _ours(root, args.changes, 1)
        floor = _floor(root, args.changes)
        if args.git_url:
            acs, retries, acs_single = _acs_both(args, args.git_url, root)
        else:
            with _our_git_server(root / "srv") as url:
                acs, retries, acs_single = _acs_both(args, url, root)

    print(json.dumps({
        "changes": args.changes,
        "writers": args.writers,
        "ops_per_s": round(ops, 1),
        "commits": commits,
        "ops_per_s_1_writer": round(ops_single, 1),
        "cpu_ms_per_op": {"writer": round(cpu_ms, 2), "writer_1_writer": round(cpu_ms_single, 2)},
        "acs_changes": args.acs_changes,
        "acs_pattern_ops_per_s": round(acs, 2),
        "acs_push_retries": retries,
        "acs_pattern_ops_per_s_1_writer": round(acs_single, 2),
        "acs_git_url": args.git_url or "this project's git server on 127.0.0.1",
        "floor_ops_per_s": round(floor, 1),
        "ratio_vs_acs": round(ops / acs, 1),
        "ratio_vs_floor": round(ops / floor, 2),
    }))


if __name__ == "__main__":
    main()
