"""Two writers (two processes, as two replicas would be) commit to one branch of one repo on
the real Git server at the same time: every commit either is in the branch's history or was
reported as failed (its files absent), none is lost, and the history is linear: the branch
only ever moved by compare-and-swap, never by both from the same parent.

``remote``: over smart HTTP through the Git server (a fast-forward push, refused when the
branch moved); ``local``: straight into the Git server's bare repo (``--git-repos``: the ref
moves by compare-and-swap under git's lock file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pygit2
import pytest

from harness.gitcli import fsck_clean
from harness.servers import ADMIN_PASSWORD
from harness.stack import create_cluster, status, wait_for
from tests.cluster_manager.faults import repo_path
from tests.cluster_manager.ha.replicas import Replicas

COMMITS = 10
WRITER = textwrap.dedent("""
    import json, os, sys, time
    from pathlib import Path
    from fplus.git.repo import ChangeSet, RemoteRepoWriter, RepoWriter
    kind, target, me, start_at, cache = sys.argv[1:6]  # and how many commits
    writer = (RemoteRepoWriter(target, Path(cache), "admin", os.environ["GIT_PASSWORD"])
              if kind == "remote" else RepoWriter(Path(target)))
    while time.time() < float(start_at):
        time.sleep(0.001)
    for n in range(int(sys.argv[6])):
        changes = ChangeSet(writes={f"writers/{me}/{n}": f"{n}\\n", "writers/last": f"{me} {n}\\n"})
        try:
            print(json.dumps({"n": n, "commit": writer.apply(changes, f"{me} {n}").commit}))
        except Exception as exc:
            print(json.dumps({"n": n, "error": f"{type(exc).__name__}: {exc}"}))
""")


@pytest.fixture(scope="module")
def cluster(replicas: Replicas) -> str:
    """A commissioned cluster: its repo exists on the Git server."""
    admin = replicas.stack.admin
    made = create_cluster(admin, "two-writers")
    wait_for(lambda: (status(admin, made) or {}).get("ready"), 60, "the cluster ready")
    return made


@pytest.mark.parametrize("kind", ["remote", "local"])
def test_two_writers_never_both_move_the_branch(replicas: Replicas, cluster: str, kind: str,
                                                tmp_path: Path) -> None:
    repo_dir = repo_path(replicas.stack, cluster)
    repo = pygit2.Repository(str(repo_dir))
    base = str(repo.references["refs/heads/main"].target)
    target = f"{replicas.stack.git.url}/uuid/{cluster}" if kind == "remote" else str(repo_dir)
    start_at = str(time.time() + 2)  # both start writing at once, after their imports
    env = dict(os.environ, GIT_PASSWORD=ADMIN_PASSWORD)
    writers = {me: subprocess.Popen(
        [sys.executable, "-c", WRITER, kind, target, me, start_at, str(tmp_path / me),
         str(COMMITS)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for me in (f"{kind}-a", f"{kind}-b")}
    reports: dict[str, list[dict]] = {}
    for me, proc in writers.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        reports[me] = [json.loads(line) for line in out.splitlines()]
        assert [r["n"] for r in reports[me]] == list(range(COMMITS)), out

    head = str(pygit2.Repository(str(repo_dir)).references["refs/heads/main"].target)
    history = []
    for commit in repo.walk(pygit2.Oid(hex=head)):
        if str(commit.id) == base:
            break
        assert len(commit.parents) == 1, f"{commit.id} is a merge"  # linear
        history.append(str(commit.id))
    committed = {r["commit"] for rs in reports.values() for r in rs if "commit" in r}
    assert committed <= set(history), "a reported commit is not in the branch's history"
    assert len(history) == len(committed), "the history holds commits nobody reported"
    files = _paths(repo.get(pygit2.Oid(hex=head)).tree)
    for me, rs in reports.items():
        for r in rs:
            assert (f"writers/{me}/{r['n']}" in files) == ("commit" in r), (me, r)
    fsck_clean(repo_dir)


def _paths(tree: pygit2.Tree, prefix: str = "") -> set[str]:
    found: set[str] = set()
    for entry in tree:
        path = f"{prefix}{entry.name}"
        if entry.type_str == "tree":
            found |= _paths(entry, path + "/")
        else:
            found.add(path)
    return found
