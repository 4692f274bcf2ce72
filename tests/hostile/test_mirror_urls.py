"""Auto-pull mirrors that reach inward or leak credentials.

The probe configured mirrors whose ``pull`` URL named loopback and private addresses, one
of ``http://localhost:<the Git server's own port>`` (past the "names this server" check,
which compared text), and one whose ``secretRef`` credentials went over plain HTTP, where
libgit2 sent them again after each 401, about 15 times. Now URLs are https (plain text only
to hosts the operator lists), names are resolved and private addresses refused before any
connection (``--mirror-allow-private`` lets tests use loopback), the self-check compares
addresses, and credentials go over https only, once per fetch.

Traffic stays on 127.0.0.0/8: the private ranges are checked against the policy with a
resolver that answers without the network; the real upstreams are loopback servers that
count the connections they accept.
"""

from __future__ import annotations

import dataclasses
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fplus.config_store import uuids
from fplus.git_server._domain.mirror_urls import MirrorPolicy, MirrorUrlRefused
from fplus.serving.http.local_ca import ensure_certificates
from harness.gitcli import git
from harness.servers import ADMIN_PASSWORD, Api, ServiceProcess, git_server_process
from harness.stack import wait_for
from tests.cluster_manager.git_http import GitHttpServer
from tests.git_server.conftest import make_repo

GIT_APP = uuids.App.GitRepoConfig
ADMIN = ("admin", ADMIN_PASSWORD)
UPSTREAM_AUTH = ("mirror-reader", "right-password")


def _server(store: ServiceProcess, data: Path, *flags: str) -> ServiceProcess:
    server = dataclasses.replace(git_server_process(data, store.url), log_level="INFO",
                                 settings={"ACCESS_LOG": "1"})
    server.extra_args += flags
    return server.start()


def _log(server: ServiceProcess) -> str:
    path = server.data_dir.parent / f"git_server-{server.port}.log"
    return path.read_text() if path.exists() else ""


def _mirror(store: ServiceProcess, url: str, secret: str | None = None) -> str:
    """A new repo whose branch ``m`` mirrors ``url`` every second; the repo's uuid."""
    admin = Api(store.url, ADMIN)
    repo = make_repo(admin)
    spec: dict = {"url": url, "interval": "1s"}
    if secret is not None:
        spec["auth"] = {"secretRef": secret}
    r = admin.put(f"/v2/app/{GIT_APP}/object/{repo.uuid}",
                  json={"path": repo.path, "pull": {"m": spec}})
    assert r.status_code in (201, 204), r.text
    return repo.uuid


def _refused(server: ServiceProcess, repo: str, reason: str) -> str:
    line = wait_for(lambda: next((ln for ln in _log(server).splitlines()
                                  if f"mirror {repo}@m refused" in ln), None),
                    timeout=20, what=f"the refusal of {repo}'s mirror")
    assert reason in line, line
    return line


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[GitHttpServer]:
    """A plain-HTTP upstream on loopback that counts the connections it accepts."""
    git("init", "-q", "--bare", tmp_path / "up" / "r.git")
    with GitHttpServer(tmp_path / "up", auth=UPSTREAM_AUTH) as server:
        yield server


def test_inward_urls_are_refused_before_any_connection(
        fresh_store: ServiceProcess, tmp_path: Path, upstream: GitHttpServer) -> None:
    """The defaults: https to public addresses only."""
    server = _server(fresh_store, tmp_path / "git")
    port = upstream.base.rsplit(":", 1)[1]
    try:
        cases = {f"https://127.0.0.1:{port}/r.git": "127.0.0.1, a loopback",
                 f"https://localhost:{port}/r.git": "a loopback",
                 f"https://127.9.9.9:{port}/r.git": "127.9.9.9, a loopback",
                 f"http://127.0.0.1:{port}/r.git": "is not https",
                 f"git://127.0.0.1:{port}/r.git": "is not https"}
        for url, reason in cases.items():
            _refused(server, _mirror(fresh_store, url), reason)
        assert upstream.connections == 0
    finally:
        server.stop()


def test_this_server_by_another_name_is_refused(fresh_store: ServiceProcess,
                                                tmp_path: Path) -> None:
    """With loopback and plain text allowed (as tests need), ``localhost`` and another
    loopback address still reach this server itself: refused, no request made."""
    server = _server(fresh_store, tmp_path / "git", "--mirror-allow-private",
                     "--mirror-http-host", "localhost", "--mirror-http-host", "127.0.0.2")
    try:
        target = make_repo(Api(fresh_store.url, ADMIN)).uuid
        for host in ("localhost", "127.0.0.2"):
            repo = _mirror(fresh_store, f"http://{host}:{server.port}/uuid/{target}")
            _refused(server, repo, "reaches this server")
        assert f"/uuid/{target}/info/refs" not in _log(server)
    finally:
        server.stop()


def test_credentials_go_over_https_only(fresh_store: ServiceProcess, tmp_path: Path,
                                        upstream: GitHttpServer) -> None:
    server = _server(fresh_store, tmp_path / "git", "--mirror-allow-private",
                     "--mirror-http-host", "127.0.0.1")
    (tmp_path / "git" / "secrets").mkdir(parents=True, exist_ok=True)
    (tmp_path / "git" / "secrets" / "creds").write_text(":".join(UPSTREAM_AUTH))
    try:
        repo = _mirror(fresh_store, upstream.url("r.git"), secret="creds")
        _refused(server, repo, "credentials (auth.secretRef) are sent over https only")
        assert upstream.connections == 0 and upstream.credentials_seen == 0
    finally:
        server.stop()


@pytest.fixture
def tls_upstream(tmp_path: Path) -> Iterator[tuple[GitHttpServer, Path]]:
    """An https upstream on loopback with a CA of its own; (server, CA file)."""
    git("init", "-q", "--bare", tmp_path / "tls" / "r.git")
    work = tmp_path / "tls-work"
    git("init", "-q", work)
    (work / "README.md").write_text("upstream\n")
    git("add", ".", cwd=work)
    git("commit", "-q", "-m", "first", cwd=work)
    git("push", "-q", tmp_path / "tls" / "r.git", "HEAD:refs/heads/main", cwd=work)
    found = ensure_certificates(tmp_path / "ca", ["127.0.0.1"])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(found.cert, found.key)
    with GitHttpServer(tmp_path / "tls", auth=UPSTREAM_AUTH, tls=context) as server:
        yield server, found.ca


def test_refused_credentials_are_sent_once_per_fetch(
        fresh_store: ServiceProcess, tmp_path: Path,
        tls_upstream: tuple[GitHttpServer, Path]) -> None:
    upstream, ca = tls_upstream
    server = _server(fresh_store, tmp_path / "git", "--mirror-allow-private",
                     "--mirror-ca-file", str(ca))
    secrets = tmp_path / "git" / "secrets"
    secrets.mkdir(parents=True, exist_ok=True)
    (secrets / "wrong").write_text("mirror-reader:wrong-password")
    (secrets / "right").write_text(":".join(UPSTREAM_AUTH))
    try:
        repo = _mirror(fresh_store, upstream.url("r.git"), secret="wrong")
        wait_for(lambda: f"mirror {repo}@m: pulling" in _log(server), timeout=20,
                 what="the first fetch to fail")
        server.stop()  # no second fetch: the count is one fetch's
        assert upstream.credentials_seen == 1
        server.start()
        mirrored = _mirror(fresh_store, upstream.url("r.git"), secret="right")
        bare = tmp_path / "git" / "repos" / f"{mirrored}.git"
        assert wait_for(_branch(bare), timeout=20, what="the mirror with the right password")
    finally:
        server.stop()


def _branch(bare: Path) -> Callable[[], str | None]:
    def probe() -> str | None:
        if not (bare / "HEAD").exists():
            return None
        return git("--git-dir", bare, "rev-parse", "--verify", "-q", "refs/heads/m",
                   check=False).strip() or None
    return probe


def _fake(answers: dict[str, list[str]]) -> Callable[[str, int], list[str]]:
    return lambda host, port: answers[host]


@pytest.mark.parametrize("address", [
    "10.1.2.3", "172.16.0.9", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
    "127.0.0.1", "::1", "fe80::1", "fd00::1", "::ffff:10.0.0.1", "224.0.0.1"])
def test_private_addresses_are_refused_by_name_and_by_number(address: str) -> None:
    """Without the network: a resolver that answers from a table."""
    policy = dataclasses.replace(MirrorPolicy.of((), False, ["0.0.0.0:8702"]),
                                 resolver=_fake({"inward.example": ["93.184.215.14", address],
                                                 address: [address]}))
    for host in ("inward.example", address if ":" not in address else f"[{address}]"):
        url = f"https://{host}/r.git"
        policy.check_spec(url, credentials=True)
        with pytest.raises(MirrorUrlRefused, match="loopback, link-local, private"):
            policy.check_addresses(url)
    public = dataclasses.replace(policy, resolver=_fake({"git.example": ["93.184.215.14"]}))
    assert public.check_addresses("https://git.example/r.git") == ["93.184.215.14"]
