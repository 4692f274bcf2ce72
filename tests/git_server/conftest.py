"""Fixtures for the Git server tests: one real ``git-server`` per session, the real git CLI.

The server runs against the session Config Store with ``--acl-cache-seconds 0.5``; each
test makes its own repo objects and principals, so tests never share ACL state.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid as uuid_mod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

import pytest
import requests

from fplus.config_store import uuids
from fplus.serving.http.local_ca import ensure_certificates
from harness.servers import (
    ADMIN_PASSWORD,
    Api,
    ConfigStoreProcess,
    ServiceProcess,
    git_server_process,
)
from tests.conftest import make_class, make_object, make_user

GIT_APP = uuids.App.GitRepoConfig
ADMIN = ("admin", ADMIN_PASSWORD)
T = TypeVar("T")


# -- polling ---------------------------------------------------------------------------------

def wait_for(probe: Callable[[], T], done: Callable[[T], bool], timeout: float = 5.0,
             interval: float = 0.05) -> T:
    """Call ``probe`` until ``done(result)``; return the last result (the caller asserts)."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if done(result) or time.monotonic() > deadline:
            return result
        time.sleep(interval)


# -- the git CLI -----------------------------------------------------------------------------

class Git:
    """The real ``git`` CLI in an isolated environment (no system/global config, no prompts)."""

    def __init__(self, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        (home / ".gitconfig").write_text(
            "[init]\n\tdefaultBranch = main\n"
            "[user]\n\tname = Git Server Tests\n\temail = tests@example.invalid\n"
            "[protocol]\n\tversion = 2\n")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GIT_", "SSH_ASKPASS")) and k != "HOME"}
        env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
                   GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
                   GIT_TERMINAL_PROMPT="0", LC_ALL="C")
        self.env = env

    def run(self, *args: str, cwd: Path | None = None, check: bool = True,
            stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
        """``git <args>``; with ``check`` a failure raises with git's stderr in the message."""
        proc = subprocess.run(["git", *args], cwd=cwd, env=self.env, capture_output=True,
                              text=True, timeout=60, input=stdin.decode() if stdin else None)
        if check and proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}):\n"
                                 f"{proc.stdout}\n{proc.stderr}")
        return proc

    def clone(self, url: str, dest: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("clone", "--quiet", url, str(dest), check=check)

    def commit_file(self, work: Path, name: str, content: str | bytes,
                    message: str | None = None) -> str:
        """Write ``name`` in the work tree, commit it and return the new commit's sha."""
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        self.run("add", "--", name, cwd=work)
        self.run("commit", "--quiet", "-m", message or f"add {name}", cwd=work)
        return self.head(work)

    def head(self, work: Path, ref: str = "HEAD") -> str:
        return self.run("rev-parse", ref, cwd=work).stdout.strip()

    def new_work(self, work: Path, files: dict[str, str] | None = None) -> str:
        """A fresh local repo on ``main`` with one commit; returns its sha."""
        self.run("init", "--quiet", "-b", "main", str(work))
        sha = ""
        for name, content in (files or {"README": f"{work.name}\n"}).items():
            sha = self.commit_file(work, name, content)
        return sha

    def push(self, work: Path, url: str, refspec: str = "HEAD:refs/heads/main",
             check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("push", "--quiet", "--porcelain", url, refspec, cwd=work, check=check)

    def ls_remote(self, url: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("ls-remote", url, check=check)

    def fsck(self, bare: Path) -> None:
        """``git fsck --strict`` on a bare repo is clean: only notices (an unborn HEAD)."""
        proc = self.run("--git-dir", str(bare), "fsck", "--strict", "--no-progress",
                        "--no-dangling", check=False)
        problems = [line for line in (proc.stdout + proc.stderr).splitlines()
                    if line.strip() and not line.startswith("notice:")]
        assert proc.returncode == 0 and not problems, (
            f"git fsck --strict {bare}:\n{proc.stdout}\n{proc.stderr}")


@pytest.fixture(scope="session")
def git(tmp_path_factory: pytest.TempPathFactory) -> Git:
    return Git(tmp_path_factory.mktemp("git-home"))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A directory for this test's clones and work trees."""
    return tmp_path


# -- the server ------------------------------------------------------------------------------

@dataclass
class GitServer:
    """A running ``git-server``, with URL builders for both repo URL forms."""

    proc: ServiceProcess
    data_dir: Path
    mirror_ca: Path | None = None
    """The directory of the CA its mirror fetches trust (``--mirror-ca-file``); upstreams
    get certificates from it with :func:`fplus.serving.http.local_ca.ensure_certificates`."""

    @property
    def url(self) -> str:
        return self.proc.url

    @property
    def port(self) -> int:
        return self.proc.port

    def api(self, auth: tuple[str, str] | None = None) -> Api:
        return Api(self.url, auth)

    def bearer(self, token: str) -> Api:
        api = Api(self.url)
        api.headers["Authorization"] = f"Bearer {token}"
        return api

    def base(self, auth: tuple[str, str] | None) -> str:
        if auth is None:
            return self.url
        user, password = (quote(part, safe="") for part in auth)
        return f"http://{user}:{password}@127.0.0.1:{self.port}"

    def uuid_url(self, repo: str, auth: tuple[str, str] | None = ADMIN) -> str:
        return f"{self.base(auth)}/uuid/{repo}"

    def path_url(self, path: str, auth: tuple[str, str] | None = ADMIN) -> str:
        return f"{self.base(auth)}/git/{path}"

    def bare(self, repo: str) -> Path:
        return self.data_dir / "repos" / f"{repo}.git"

    @property
    def archive(self) -> Path:
        return self.data_dir / "archive"

    def healthy(self) -> bool:
        return self.proc.proc is not None and self.proc.proc.poll() is None and requests.get(
            self.url + "/ping", timeout=5).status_code == 200


@pytest.fixture(scope="session")
def git_server(config_store: ConfigStoreProcess, tmp_path_factory: pytest.TempPathFactory,
               git: Git) -> Iterator[GitServer]:
    """One Git server for the session; at teardown every stored repo must fsck clean."""
    data = tmp_path_factory.mktemp("git") / "data"
    ca = tmp_path_factory.mktemp("mirror-ca")
    proc = git_server_process(data, config_store.url)
    # upstreams of the mirror tests are on loopback, over https with a CA of their own
    proc.extra_args += ("--mirror-allow-private", "--mirror-ca-file",
                        str(ensure_certificates(ca, ["127.0.0.1"]).ca))
    server = GitServer(proc.start(), data, ca)
    try:
        yield server
    finally:
        proc.stop()
    for bare in sorted((data / "repos").glob("*.git")):
        git.fsck(bare)


@pytest.fixture
def root_git(git_server: GitServer) -> Api:
    """The Git server's HTTP API as the root principal."""
    return git_server.api(ADMIN)


# -- repos and users -------------------------------------------------------------------------

@dataclass(frozen=True)
class Repo:
    """A repo object, the class it was made in, and its ``group/name`` path."""

    uuid: str
    klass: str
    path: str


def configure(admin: Api, repo: str, path: str) -> None:
    """PUT the repo's Git repository configuration entry."""
    r = admin.put(f"/v2/app/{GIT_APP}/object/{repo}", json={"path": path})
    assert r.status_code in (201, 204), r.text


def unconfigure(admin: Api, repo: str) -> None:
    r = admin.delete(f"/v2/app/{GIT_APP}/object/{repo}")
    assert r.status_code == 204, r.text


def make_repo(admin: Api, klass: str | None = None, *, configured: bool = True) -> Repo:
    """A new object in ``klass`` (a fresh class by default), configured as a Git repo."""
    klass = klass or make_class(admin)
    obj = make_object(admin, klass)
    path = f"tests/r-{uuid_mod.uuid4().hex[:12]}"
    if configured:
        configure(admin, obj, path)
    return Repo(obj, klass, path)


@pytest.fixture
def repo(admin: Api, git_server: GitServer) -> Repo:
    """A configured, still empty repo in a class of its own."""
    return make_repo(admin)


@dataclass(frozen=True)
class User:
    """A principal with a password, usable against both servers."""

    uuid: str
    auth: tuple[str, str]


@pytest.fixture
def new_user(admin: Api) -> Callable[[], User]:
    """Make principals without any grant."""
    def make() -> User:
        principal, api = make_user(admin)
        assert api.auth is not None
        return User(principal, api.auth)
    return make
