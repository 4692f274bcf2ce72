"""Group commit under 100 concurrent writers, and kill -9 in the middle of a write storm."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from fplus.git.repo import ChangeSet, RepoWriter, writer_for
from harness.gitcli import bare, files_at, fsck_clean

ROOT = Path(__file__).resolve().parents[2]


def test_hundred_threads_all_land_in_a_linear_batched_history(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    writer = writer_for(repo)
    barrier = threading.Barrier(100)
    results: dict[int, str] = {}

    def add(i: int) -> None:
        barrier.wait()
        results[i] = writer.apply(ChangeSet(writes={f"files/{i:03}.txt": f"{i}\n"}),
                                  f"Add file {i}").commit

    threads = [threading.Thread(target=add, args=(i,)) for i in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert files_at(repo) == [f"files/{i:03}.txt" for i in range(100)]
    assert bare(repo, "show", "main:files/042.txt") == "42\n"
    count = int(bare(repo, "rev-list", "--count", "main"))
    assert count < 100, "no batching happened"
    parents = bare(repo, "rev-list", "--parents", "main").splitlines()
    assert all(len(line.split()) <= 2 for line in parents)  # linear
    history = set(bare(repo, "rev-list", "main").split())
    assert set(results.values()) <= history  # every caller got a commit that is in history
    messages = bare(repo, "log", "--format=%B", "main")
    assert all(f"Add file {i}\n" in messages for i in range(100))
    fsck_clean(repo)


STORM = textwrap.dedent("""
    import sys, threading
    from fplus.git.repo import ChangeSet, RepoWriter
    w = RepoWriter(sys.argv[1])
    def loop(t):
        n = 0
        while True:
            n += 1
            w.apply(ChangeSet(writes={f"t{t}/{n % 50}.txt": f"{n}" * 100, "edo/cluster/x": str(n)},
                              replace_dirs={"edo/cluster"}), f"storm {t} {n}")
    for t in range(4):
        threading.Thread(target=loop, args=(t,), daemon=True).start()
    print("started", flush=True)
    threading.Event().wait()
""")


def test_kill_9_during_write_storm_leaves_a_sound_repo(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    RepoWriter(repo).apply(ChangeSet(writes={"by-hand/keep": "k"}), "seed")
    proc = subprocess.Popen([sys.executable, "-c", STORM, str(repo)], cwd=ROOT,
                            stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout.readline() == b"started\n"
        time.sleep(1.0)
        before = int(bare(repo, "rev-list", "--count", "main"))
        assert before > 5, "the storm did not write"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    fsck_clean(repo)
    head = bare(repo, "rev-parse", "--verify", "main^{commit}").strip()
    assert bare(repo, "cat-file", "-t", head).strip() == "commit"
    assert "by-hand/keep" in files_at(repo)
    after = RepoWriter(repo, stale_lock_after=0.5, lock_timeout=5)
    result = after.apply(ChangeSet(writes={"after-kill": "ok"}), "after kill")
    assert result.changed and bare(repo, "rev-parse", "main^").strip() == head
    fsck_clean(repo)
