"""An oversized push: the Git server refuses it with 413 before git sees it, writes nothing.

The probe pushed 300 MB into a cluster repo and the Git server took it all. Here the limit
is set small (``--push-limit``) so the push over it stays small too; the same push under a
larger limit lands, and a gzip body that inflates past the limit is refused like a big one.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from harness.gitcli import GIT_ENV, git
from harness.servers import ADMIN_PASSWORD, Api, ServiceProcess, git_server_process
from harness.stack import wait_for
from tests.git_server.conftest import Repo, make_repo

LIMIT = 256 * 1024
ADMIN = ("admin", ADMIN_PASSWORD)


@pytest.fixture
def git_server(fresh_store: ServiceProcess, tmp_path: Path) -> Iterator[ServiceProcess]:
    server = dataclasses.replace(git_server_process(tmp_path / "git", fresh_store.url))
    server.extra_args += ("--push-limit", str(LIMIT))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def repo(fresh_store: ServiceProcess, git_server: ServiceProcess) -> Repo:
    made = make_repo(Api(fresh_store.url, ADMIN))
    refs = f"{git_server.url}/uuid/{made.uuid}/info/refs?service=git-receive-pack"
    wait_for(lambda: requests.get(refs, auth=ADMIN, timeout=5).ok, timeout=15,
             what="the repo served")
    return made


def _push(url: str, work: Path, files: dict[str, bytes]) -> subprocess.CompletedProcess[str]:
    for name, data in files.items():
        (work / name).write_bytes(data)
    git("add", ".", cwd=work)
    git("commit", "-q", "-m", "files", cwd=work)
    return subprocess.run(["git", "push", url, "HEAD:refs/heads/main"], cwd=work,
                          env=os.environ | GIT_ENV, capture_output=True, text=True,
                          timeout=60, check=False)


def _objects(bare: Path) -> list[str]:
    return sorted(str(p.relative_to(bare)) for p in (bare / "objects").rglob("*")
                  if p.is_file())


def test_a_push_over_the_limit_is_refused_and_writes_nothing(
        git_server: ServiceProcess, repo: Repo, tmp_path: Path) -> None:
    url = (f"http://admin:{ADMIN_PASSWORD}@127.0.0.1:{git_server.port}/uuid/{repo.uuid}")
    work = tmp_path / "work"
    git("init", "-q", work)
    small = _push(url, work, {"README.md": b"hello\n"})
    assert small.returncode == 0, small.stderr
    bare = tmp_path / "git" / "repos" / f"{repo.uuid}.git"
    head = git("--git-dir", bare, "rev-parse", "main").strip()
    before = _objects(bare)
    # random bytes do not compress: the pack is as big as the file
    big = _push(url, work, {"blob.bin": os.urandom(4 * LIMIT)})
    assert big.returncode != 0
    assert "HTTP 413" in big.stderr, big.stderr  # git shows the status, not the body
    assert git("--git-dir", bare, "rev-parse", "main").strip() == head
    assert _objects(bare) == before  # no object, no quarantine left behind
    # within the limit again: the same server takes it
    git("reset", "-q", "--hard", "HEAD~1", cwd=work)
    again = _push(url, work, {"more.txt": b"x" * 1000})
    assert again.returncode == 0, again.stderr


def test_the_refusal_comes_with_its_reason(git_server: ServiceProcess, repo: Repo) -> None:
    """A declared body over the limit, and a small gzip body inflating past it: 413 naming
    the limit and its setting."""
    url = f"{git_server.url}/uuid/{repo.uuid}/git-receive-pack"
    headers = {"Content-Type": "application/x-git-receive-pack-request"}
    declared = requests.post(url, data=b"0" * (LIMIT + 1), auth=ADMIN, headers=headers,
                             timeout=30)
    bomb = requests.post(url, data=gzip.compress(b"\0" * (4 * LIMIT)), auth=ADMIN,
                         headers=headers | {"Content-Encoding": "gzip"}, timeout=30)
    for r in (declared, bomb):
        assert r.status_code == 413, r.text
        assert f"push limit of {LIMIT} bytes" in r.json()["error"]
        assert "--push-limit" in r.json()["error"]
