"""One file-system sync shared by the writers waiting for one, and what it guarantees with
real Git: the ref moves only once the commit's objects are on disk, ``apply`` returns only
once the moved ref is, and a crash before that leaves the repo as it was."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from fplus.git import bare
from fplus.git.bare import durable
from fplus.git.repo import ChangeSet, RepoWriter, read_file
from fplus.git.repo import writer as writer_module
from fplus.git.repo._durable import SharedSync, shared_sync
from harness.gitcli import files_at, fsck_clean

ROOT = Path(__file__).resolve().parents[2]
REF = "refs/heads/main"
DEADLINE_S = 10.0


def _until(done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_callers_arriving_during_a_sync_share_the_next_one() -> None:
    release, started = threading.Event(), threading.Event()
    calls: list[int] = []

    def sync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            started.set()
            release.wait(DEADLINE_S)

    group = SharedSync(7, sync)
    first = threading.Thread(target=group.flush)
    first.start()
    assert started.wait(DEADLINE_S)
    late = [threading.Thread(target=group.flush) for _ in range(5)]
    for thread in late:
        thread.start()
    _until(lambda: group.waiting == 5)  # all five wait: the running sync began before them
    release.set()
    for thread in [first, *late]:
        thread.join(DEADLINE_S)
        assert not thread.is_alive()
    assert calls == [7, 7]  # theirs was one more sync, not five


def test_a_caller_after_a_sync_ended_gets_a_sync_of_its_own() -> None:
    calls: list[int] = []
    group = SharedSync(3, calls.append)
    group.flush()
    group.flush()
    assert calls == [3, 3] and group.syncs == 2


def test_a_failed_sync_raises_for_its_caller_and_the_next_caller_syncs_again() -> None:
    calls: list[int] = []

    def sync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            raise OSError(5, "Input/output error")

    group = SharedSync(3, sync)
    with pytest.raises(OSError, match="Input/output"):
        group.flush()
    group.flush()
    assert len(calls) == 2


@pytest.mark.skipif(not durable.AVAILABLE, reason="no syncfs(2) here")
def test_syncing_a_real_file_system(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        durable.sync_file_system(fd)
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        durable.sync_file_system(fd)  # closed: EBADF
    found = shared_sync(tmp_path)
    assert found is not None and found is shared_sync(tmp_path)  # one per file system


def _recording(repo: Path, seen: list[dict[str, object]]) -> SharedSync:
    """A shared sync that notes the repo's state each time it syncs."""
    pack_dir = repo / "objects" / "pack"

    def sync(fd: int) -> None:
        lock = repo / f"{REF}.lock"
        seen.append({"ref": bare.read_ref(repo, REF),
                     "lock": lock.read_text().strip() if lock.exists() else None,
                     "packs": len(list(pack_dir.glob("pack-*.idx"))),
                     "staged": len(list(pack_dir.glob("tmp_*")))})

    return SharedSync(os.open(repo, os.O_RDONLY), sync)


@pytest.mark.parametrize("seeded", [False, True], ids=["new repo", "existing branch"])
def test_the_ref_moves_after_one_sync_and_apply_returns_after_another(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seeded: bool) -> None:
    repo = tmp_path / "r.git"
    parent = RepoWriter(repo).apply(ChangeSet(writes={"a": "1"}), "seed").commit \
        if seeded else None
    seen: list[dict[str, object]] = []
    monkeypatch.setattr(writer_module, "shared_sync", lambda path: _recording(repo, seen))
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    result = RepoWriter(repo).apply(ChangeSet(writes={"b": "2"}), "commit")
    packs = 1 if seeded else 0
    assert seen == [
        # the objects and the ref's new value written, nothing published
        {"ref": parent, "lock": result.commit, "packs": packs, "staged": 2},
        # published, and the lock renamed over the ref
        {"ref": result.commit, "lock": None, "packs": packs + 1, "staged": 0},
    ]
    assert fsyncs == []  # the two shared syncs instead of an fsync per file
    assert read_file(repo, "b") == b"2"
    fsck_clean(repo)


def test_without_syncfs_each_file_is_fsynced(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "shared_sync", lambda path: None)
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    repo = tmp_path / "r.git"
    RepoWriter(repo).apply(ChangeSet(writes={"a": "1"}), "one")
    assert len(fsyncs) == 5  # the pack, its index, the ref; the pack and ref directories
    assert files_at(repo) == ["a"]
    fsck_clean(repo)


CRASH = """
import os, sys, time
from pathlib import Path
from fplus.git.repo import ChangeSet, RepoWriter
from fplus.git.repo import writer
from fplus.git.repo._durable import SharedSync

def stop(fd):
    print("syncing", flush=True)
    time.sleep(3600)

writer.shared_sync = lambda path: SharedSync(os.open(path, os.O_RDONLY), stop)
RepoWriter(Path(sys.argv[1])).apply(ChangeSet(writes={"b": "2"}), "commit")
print("returned", flush=True)
"""


@pytest.mark.parametrize("seeded", [False, True], ids=["new repo", "existing branch"])
def test_killed_before_the_sync_the_branch_is_as_it_was(tmp_path: Path, seeded: bool) -> None:
    """kill -9 with the objects and the ref's new value written but not yet synced: nothing
    was published, ``apply`` never returned (so no caller reported the commit), and the next
    writer commits once the dead writer's lock is stale."""
    repo = tmp_path / "r.git"
    before = RepoWriter(repo).apply(ChangeSet(writes={"a": "1"}), "seed").commit \
        if seeded else None
    proc = subprocess.Popen([sys.executable, "-c", CRASH, str(repo)], cwd=ROOT,
                            stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"syncing\n"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    assert b"returned" not in out
    assert bare.read_ref(repo, REF) == before
    assert len(list((repo / "objects" / "pack").glob("pack-*.idx"))) == (1 if seeded else 0)
    lock = repo / f"{REF}.lock"
    assert lock.exists()
    if seeded:
        fsck_clean(repo)
    os.utime(lock, (time.time() - 60, time.time() - 60))  # the dead writer's lock is stale
    after = RepoWriter(repo, stale_lock_after=10).apply(ChangeSet(writes={"c": "3"}), "after")
    assert after.changed and files_at(repo) == (["a", "c"] if seeded else ["c"])
    fsck_clean(repo)
