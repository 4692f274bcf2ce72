"""The smaller findings around the edges of the Cluster Manager and the Git server, against
real processes: weak sealing keys, Git status leaks, ``.git`` pushes, the token database's
file, a poisoned edge status entry, and ``/healthz`` while notify fails."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
import requests

from fplus.cluster_manager.services.bootstrap.tokens import BootstrapTokens
from fplus.config_store import uuids
from fplus.git.repo import ChangeSet, RemoteRepoWriter
from harness.certs import certificate, make_cert, weak_rsa_key
from harness.gitcli import GIT_ENV
from harness.servers import (
    ADMIN_PASSWORD,
    Api,
    ServiceProcess,
    cluster_manager_process,
    free_port,
    plain_env,
    run_command,
)
from harness.stack import Stack, create_cluster, status, wait_for
from tests.conftest import grant, make_class, make_object, make_user

EDGE = uuids.App.EdgeClusterStatus
GIT_APP = uuids.App.GitRepoConfig
TOKENS = "bootstrap-tokens.sqlite"


@pytest.fixture(scope="module")
def stack(module_stack: Stack) -> Stack:
    """A stack of this module's own: a poisoned edge status entry stays in it (the fleet's
    sync counts and cluster listings of other modules would meet it)."""
    return module_stack


@pytest.fixture(scope="module")
def admin(stack: Stack) -> Api:
    return stack.admin


@pytest.fixture(scope="module")
def root(stack: Stack) -> Api:
    """The Cluster Manager as the root admin."""
    return Api(stack.manager.url, ("admin", ADMIN_PASSWORD))


@pytest.fixture(scope="module")
def clusters(stack: Stack) -> dict[str, str]:
    """Commissioned clusters by name, made together (the reconciler works on them at once)."""
    made = {name: create_cluster(stack.admin, name)
            for name in ("weak-key", "token-file", "poisoned", "healthy")}
    for name, cluster in made.items():
        wait_for(lambda c=cluster: (status(stack.admin, c) or {}).get("ready"), 30,
                 f"{name} ready")
    return made


def report_edge(admin: Api, cluster: str, **fields: object) -> None:
    r = admin.patch(f"/v2/app/{EDGE}/object/{cluster}", json=fields,
                    headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 204, r.text


def head(stack: Stack, cluster: str) -> str:
    return str(pygit2.Repository(str(stack.repos / f"{cluster}.git")).branches["main"].target)


def seal(root: Api, cluster: str, value: bytes = b"v") -> requests.Response:
    return root.put(f"/v1/cluster/{cluster}/secret/app/creds/password", data=value)


# -- 1. weak sealing keys -----------------------------------------------------------------

def test_rsa_keys_under_2048_bits_are_422_and_nothing_is_committed(
        stack: Stack, admin: Api, root: Api, clusters: dict[str, str]) -> None:
    cluster = clusters["weak-key"]
    before = head(stack, cluster)
    for bits in (512, 1024):
        report_edge(admin, cluster, kubeseal_cert=make_cert(weak_rsa_key(bits)))
        r = seal(root, cluster)
        assert r.status_code == 422, (bits, r.text)
        assert f"{bits}-bit RSA key; at least 2048 bits" in r.json()["error"]
        assert head(stack, cluster) == before
    report_edge(admin, cluster, kubeseal_cert=certificate())  # 2048 bits: sealed
    assert seal(root, cluster).status_code == 204
    assert head(stack, cluster) != before


# -- 2. Git status filtered by Pull -------------------------------------------------------

def _git_repo(admin: Api) -> str:
    repo = make_object(admin, make_class(admin))
    r = admin.put(f"/v2/app/{GIT_APP}/object/{repo}", json={"path": f"hostile/r-{repo[:8]}"})
    assert r.status_code in (201, 204), r.text
    return repo


def test_git_status_shows_only_the_repos_the_caller_may_pull(stack: Stack, admin: Api) -> None:
    mine, other = _git_repo(admin), _git_repo(admin)
    reader, session = make_user(admin)
    grant(admin, reader, uuids.GitPerm.Pull, mine)
    _, nobody = make_user(admin)
    git_root = Api(stack.git.url, ("admin", ADMIN_PASSWORD))
    as_reader, as_nobody = Api(stack.git.url, session.auth), Api(stack.git.url, nobody.auth)

    wait_for(lambda: {mine, other} <= set(git_root.get("/v1/status").json()), 10,
             "both repos listed for root")
    assert as_reader.get("/v1/status").json() == [mine]
    assert as_nobody.get("/v1/status").json() == []
    assert as_reader.get(f"/v1/status/{mine}").status_code == 200
    for api, repo in ((as_reader, other), (as_nobody, mine)):
        r = api.get(f"/v1/status/{repo}")
        assert r.status_code == 403 and "main" not in r.text, r.text
    unknown = "00000000-0000-4000-8000-00000000abcd"
    assert as_nobody.get(f"/v1/status/{unknown}").status_code == 403  # no probing either
    assert git_root.get(f"/v1/status/{unknown}").status_code == 404


# -- 3. pushes of fsck-bad trees ----------------------------------------------------------

def _git(*args: str | Path, cwd: Path, stdin: str | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    """The real git CLI, isolated from the user's and the system's configuration."""
    done = subprocess.run(["git", *map(str, args)], cwd=cwd, input=stdin, env=os.environ | GIT_ENV,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 or not check, done.stderr
    return done


def _bad_commit(work: Path, name: str) -> str:
    """A commit whose tree holds ``name/config`` (``git mktree`` does not check names)."""
    work.mkdir()
    _git("init", "-q", "-b", "main", ".", cwd=work)
    blob = _git("hash-object", "-w", "--stdin", cwd=work, stdin="[core]\n").stdout.strip()
    inner = _git("mktree", cwd=work, stdin=f"100644 blob {blob}\tconfig\n").stdout.strip()
    outer = _git("mktree", cwd=work, stdin=f"040000 tree {inner}\t{name}\n").stdout.strip()
    return _git("commit-tree", outer, "-m", f"sneak {name} in", cwd=work).stdout.strip()


@pytest.mark.parametrize("name", [".git", ".GIT", ".."])
def test_a_push_with_a_bad_tree_entry_is_refused(stack: Stack, admin: Api, tmp_path: Path,
                                                 name: str) -> None:
    repo = _git_repo(admin)
    commit = _bad_commit(tmp_path / "work", name)
    url = f"http://admin:{ADMIN_PASSWORD}@127.0.0.1:{stack.git.port}/uuid/{repo}"
    pushed = _git("push", url, f"{commit}:refs/heads/main", cwd=tmp_path / "work", check=False)
    assert pushed.returncode != 0, pushed.stderr
    assert "hasDot" in pushed.stderr, pushed.stderr  # git's own fsck message names the problem
    assert Api(stack.git.url, ("admin", ADMIN_PASSWORD)).get(f"/v1/status/{repo}").json() == {}


def test_the_cluster_managers_own_objects_pass_the_push_check(stack: Stack, admin: Api,
                                                               tmp_path: Path) -> None:
    """What the Cluster Manager writes with pygit2, pushed through the Git server (as it does
    for a repo it does not host), passes ``receive.fsckObjects``."""
    repo = _git_repo(admin)
    writer = RemoteRepoWriter(f"{stack.git.url}/uuid/{repo}", tmp_path / "cache", "admin",
                              ADMIN_PASSWORD)
    first = writer.apply(ChangeSet(writes={"README.md": "hi\n", "edo/cluster/a.yaml": "a: 1\n",
                                           "edo/secrets/ns/s.yaml": "kind: SealedSecret\n"}),
                         "Init")
    second = writer.apply(ChangeSet(writes={"edo/cluster/b.yaml": "b: 2\n"},
                                    deletes=frozenset({"README.md"})), "Two")
    assert first.changed and second.changed
    branches = Api(stack.git.url, ("admin", ADMIN_PASSWORD)).get(f"/v1/status/{repo}").json()
    assert branches == {"main": second.commit}


# -- 4. the token database's file ---------------------------------------------------------

def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_token_database_is_private(stack: Stack, root: Api,
                                       clusters: dict[str, str]) -> None:
    cluster = clusters["token-file"]
    assert root.post(f"/v1/cluster/{cluster}/bootstrap-url").status_code == 200  # a write
    files = sorted(stack.root.joinpath("cm").glob(TOKENS + "*"))
    assert stack.root / "cm" / TOKENS in files
    assert {f.name: _mode(f) for f in files} == dict.fromkeys((f.name for f in files), 0o600)


@pytest.fixture(scope="module")
def lone_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """A Config Store of its own for Cluster Managers started beside the stack's (a second
    Cluster Manager on the stack's store would take over its principal)."""
    store = ServiceProcess(tmp_path_factory.mktemp("lone") / "cs").start()
    yield store
    store.stop()


def test_a_looser_token_database_is_tightened_at_start(lone_store: ServiceProcess,
                                                       tmp_path: Path) -> None:
    data = tmp_path / "cm"
    BootstrapTokens(data / TOKENS).issue("00000000-0000-4000-8000-000000000001")
    for file in data.glob(TOKENS + "*"):
        file.chmod(0o644)
    manager = cluster_manager_process(data, lone_store.url, f"http://127.0.0.1:{free_port()}",
                                      tmp_path / "repos").start()
    try:
        files = list(data.glob(TOKENS + "*"))
        assert files and all(_mode(f) == 0o600 for f in files), {f.name: oct(_mode(f))
                                                                 for f in files}
    finally:
        manager.stop()


@pytest.mark.parametrize(("content", "words"), [
    (b"", "is empty (0 bytes)"),
    (b"this is not a database, it only sits where one should be\n" * 200,
     "is not a usable SQLite database"),
])
def test_an_empty_or_corrupt_token_database_refuses_to_start(
        lone_store: ServiceProcess, tmp_path: Path, content: bytes, words: str) -> None:
    data = tmp_path / "cm"
    data.mkdir()
    (data / TOKENS).write_bytes(content)
    done = run_command("fplus.cluster_manager.cli", "serve", "--data-dir", str(data), "--port",
                       str(free_port()), "--config-store", lone_store.url, "--git",
                       f"http://127.0.0.1:{free_port()}", env=_service_env())
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(data / TOKENS) in lines[0] and words in lines[0], done.stderr
    assert (data / TOKENS).read_bytes() == content  # left as it was, for the operator


def _service_env() -> dict[str, str]:
    return plain_env() | {
        "FPLUS_USER": "admin", "FPLUS_PASSWORD": ADMIN_PASSWORD}


# -- 5. a poisoned edge status entry ------------------------------------------------------

def _poison(stack: Stack, cluster: str, depth: int) -> None:
    """Store a status entry nested ``depth`` deep straight in the Config Store's database, as
    one written before the Config Store checked nesting at the door would be."""
    deep = "[" * depth + "]" * depth
    entry = json.dumps({"kubeseal_cert": certificate()})[:-1] + f', "deep": {deep}}}'
    with sqlite3.connect(stack.store.data_dir / "config-store.db", timeout=10) as db:
        done = db.execute("UPDATE config SET json = ? WHERE app = ? AND object = ?",
                          (entry, EDGE, cluster))
        assert done.rowcount == 1
    db.close()


def test_a_poisoned_edge_status_is_a_clear_502_for_its_cluster_only(
        stack: Stack, admin: Api, root: Api, clusters: dict[str, str]) -> None:
    """Whether the Config Store cannot serve the entry (it answers 5xx, retried by the client
    for a few seconds) or the Cluster Manager cannot parse it, the answer is a 502 naming it."""
    poisoned, healthy = clusters["poisoned"], clusters["healthy"]
    for cluster in (poisoned, healthy):
        report_edge(admin, cluster, kubeseal_cert=certificate(), lastSeen="2026-01-01T00:00:00Z")
    before = head(stack, poisoned)

    _poison(stack, poisoned, 5000)  # the finding's was 962: deep enough to break a parser
    r = root.get(f"/v1/cluster/{poisoned}/status")
    assert r.status_code == 502, r.text
    assert "edge's status entry" in r.json()["error"] and "unreadable" in r.json()["error"]
    r = seal(root, poisoned)
    assert r.status_code == 502 and "unreadable" in r.json()["error"], r.text
    assert head(stack, poisoned) == before

    assert root.get(f"/v1/cluster/{healthy}/status").status_code == 200
    assert seal(root, healthy).status_code == 204
    listed = root.get("/v1/cluster", params={"limit": 1000})
    assert listed.status_code == 200, listed.text
    assert {poisoned, healthy} <= {c["uuid"] for c in listed.json()["clusters"]}


# -- 6. /healthz while the notify SEARCH fails ---------------------------------------------

def _health(manager: Api) -> tuple[int, dict]:
    r = manager.get("/healthz")
    return r.status_code, r.json()


def test_healthz_reports_a_failing_search(tmp_path: Path) -> None:
    store = ServiceProcess(tmp_path / "cs").start()
    manager = cluster_manager_process(tmp_path / "cm", store.url, f"http://127.0.0.1:{free_port()}",
                                      tmp_path / "repos")
    try:
        api = Api(manager.start().url)
        wait_for(lambda: _health(api)[0] == 200, 20, "synced")
        store.stop(signal.SIGKILL)  # the Config Store goes away: every SEARCH with it
        _, body = wait_for(lambda: (found := _health(api))[0] == 503 and found, 15,
                           "healthz to report the failing SEARCH")
        assert body["synced"] is False and "notify" in body["reason"], body
        store.start()  # the same port and data: the SEARCH is re-established
        _, body = wait_for(lambda: (found := _health(api))[0] == 200 and found, 20,
                           "healthz to recover")
        assert body["synced"] is True and "reason" not in body, body
    finally:
        manager.stop()
        store.stop()
