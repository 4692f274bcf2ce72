"""Auto-pull mirrors: a second Git server (``git http-backend`` behind Basic auth, another
loopback port) is mirrored into a branch of one of ours, and new commits there appear here
within the interval; no other branch is overwritten. Plus the spec rules, table-tested."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fplus.config_store import uuids
from fplus.git_server._domain.mirror_urls import MirrorPolicy
from fplus.git_server._domain.mirrors import (
    NEVER,
    PullSpec,
    parse_interval,
    read_credentials,
    specs,
)
from fplus.serving.http.local_ca import ensure_certificates
from harness.servers import Api
from tests.cluster_manager.git_http import GitHttpServer
from tests.git_server.conftest import Git, GitServer, Repo, wait_for

EXTERNAL_AUTH = ("mirror-reader", "s3cret-mirror")
GIT_APP = uuids.App.GitRepoConfig


@pytest.mark.parametrize(("value", "seconds"), [
    (None, 3600.0), ("1h", 3600.0), ("30s", 30.0), ("5m", 300.0), ("500ms", 0.5),
    ("2d", 172800.0), (15, 15.0), ("never", NEVER), ("1.5s", 1.5)])
def test_intervals(value: Any, seconds: float) -> None:
    assert parse_interval(value) == seconds


@pytest.mark.parametrize("value", ["soon", "0s", "-1s", 0, True, [], "1w"])
def test_bad_intervals(value: Any) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_interval(value)


REPO = "5d1c1b0e-2a9f-4c55-9f59-2b5b1d6f4a11"


@pytest.mark.parametrize(("conf", "kept"), [
    ({"url": "https://example.com/r.git"}, True),
    ({"url": "https://example.com/r.git", "ref": "release", "merge": "main"}, True),
    ({"url": "https://example.com/r.git", "auth": {"secretRef": "creds"}}, True),
    ({"url": "git://example.com/r.git"}, False),  # plain text to an unlisted host
    ({"url": "http://example.com/r.git"}, False),
    ({"url": "https://u:p@example.com/r.git"}, False),  # credentials in the URL
    ({"url": "ssh://example.com/r.git"}, False),
    ({"url": "file:///etc"}, False),
    ({"url": "http://127.0.0.1:8702/uuid/x"}, False),  # this server
    ({"url": "https://example.com/r", "ref": "../main"}, False),
    ({"url": "https://example.com/r", "merge": "mirror"}, False),  # itself
    ({"url": "https://example.com/r", "auth": {"secretRef": "../../etc/passwd"}}, False),
    ({"url": "https://example.com/r", "interval": "soon"}, False),
    ("https://example.com/r", False),
])
def test_specs_are_checked(conf: Any, kept: bool) -> None:
    found = specs(REPO, {"pull": {"mirror": conf}},
                  MirrorPolicy.of((), allow_private=False, own=["127.0.0.1:8702"]))
    assert [s.branch for s in found] == (["mirror"] if kept else [])


def test_credentials_files(tmp_path: Path) -> None:
    (tmp_path / "json").write_text(json.dumps({"username": "u", "password": "p:w"}))
    (tmp_path / "plain").write_text("user:pass\n")
    (tmp_path / "mounted").mkdir()
    (tmp_path / "mounted" / "nested").write_text("n:p")
    (tmp_path / "bad").write_text("no separator")
    assert read_credentials(tmp_path, "json") == ("u", "p:w")
    assert read_credentials(tmp_path, "plain") == ("user", "pass")
    assert read_credentials(tmp_path, "nested") == ("n", "p")
    assert read_credentials(tmp_path, "bad") is None
    assert read_credentials(tmp_path, "missing") is None


@pytest.fixture
def external(tmp_path: Path, git: Git, git_server: GitServer) -> Iterator[GitHttpServer]:
    """An upstream over https (mirrors send credentials over nothing else), with a
    certificate from the CA the Git server's mirrors trust."""
    git.run("init", "-q", "--bare", "-b", "main", str(tmp_path / "ext" / "upstream.git"))
    assert git_server.mirror_ca is not None
    found = ensure_certificates(git_server.mirror_ca, ["127.0.0.1"])
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(found.cert, found.key)
    with GitHttpServer(tmp_path / "ext", auth=EXTERNAL_AUTH, tls=tls) as server:
        yield server


def _branch(git: Git, git_server: GitServer, repo: str, branch: str) -> str | None:
    """The commit ``branch`` of our repo is at (None: no repo or no such branch)."""
    path = git_server.bare(repo)
    if not (path / "HEAD").exists():
        return None
    found = git.run("--git-dir", str(path), "rev-parse", "--verify", "-q",
                    f"refs/heads/{branch}", check=False)
    return found.stdout.strip() or None


def test_an_external_repo_is_mirrored_into_a_branch(
        admin: Api, git_server: GitServer, repo: Repo, external: GitHttpServer, git: Git,
        work: Path, tmp_path: Path) -> None:
    upstream = str(tmp_path / "ext" / "upstream.git")  # pushed to as a local path
    ext_work = work / "ext"
    first = git.new_work(ext_work, {"README.md": "v1\n"})
    git.push(ext_work, upstream)
    # our own main, pushed here before mirroring starts: never overwritten
    ours = git.new_work(work / "ours", {"OURS.md": "ours\n"})
    git.push(work / "ours", git_server.uuid_url(repo.uuid))

    secrets_dir = git_server.data_dir / "secrets"
    secrets_dir.mkdir(exist_ok=True)
    (secrets_dir / "ext-creds").write_text(":".join(EXTERNAL_AUTH))
    entry = {"path": repo.path, "pull": {"upstream": {
        "url": external.url("upstream.git"), "interval": "1s",
        "auth": {"secretRef": "ext-creds"}}}}
    assert admin.put(f"/v2/app/{GIT_APP}/object/{repo.uuid}", json=entry).status_code in (
        201, 204)
    assert wait_for(lambda: _branch(git, git_server, repo.uuid, "upstream"),
                    lambda sha: sha == first, 20) == first

    second = git.commit_file(ext_work, "README.md", "v2\n", "second")
    git.push(ext_work, upstream)
    assert wait_for(lambda: _branch(git, git_server, repo.uuid, "upstream"),
                    lambda sha: sha == second, 20) == second
    assert _branch(git, git_server, repo.uuid, "main") == ours  # untouched
    clone = work / "clone"
    git.clone(git_server.uuid_url(repo.uuid), clone)
    git.run("checkout", "-q", "upstream", cwd=clone)
    assert (clone / "README.md").read_text() == "v2\n"


def test_a_bad_mirror_url_is_refused_by_the_schema(admin: Api, repo: Repo) -> None:
    for url in ("ssh://example.com/r.git", "file:///etc", "/srv/repo"):
        entry = {"path": repo.path, "pull": {"m": {"url": url}}}
        r = admin.put(f"/v2/app/{GIT_APP}/object/{repo.uuid}", json=entry)
        assert r.status_code == 422, (url, r.text)
    assert admin.get(f"/v2/app/{GIT_APP}/object/{repo.uuid}").json() == {"path": repo.path}


def test_a_spec_object_has_the_fields_upstream_names() -> None:
    [spec] = specs(REPO, {"pull": {"m": {"url": "https://e.com/r", "ref": "dev",
                                         "interval": "never", "merge": "main",
                                         "auth": {"secretRef": "c"}}}})
    assert spec == PullSpec(REPO, "m", "https://e.com/r", "dev", NEVER, "main", "c")


def test_a_refused_spec_is_logged_once_not_at_every_pass(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from fplus.git_server._domain.mirrors import Mirrors
    entries = {REPO: {"path": "a/b", "pull": {"m": {"url": "ssh://example.com/r.git"}}}}
    mirrors = Mirrors(lambda: entries, lambda repo: tmp_path / repo, tmp_path)
    with caplog.at_level("ERROR", logger="fplus.git_server._domain.mirrors"):
        for _ in range(3):
            assert mirrors.run_due() == []
    assert [r.getMessage() for r in caplog.records] == [
        f"mirror {REPO}@m refused: 'ssh://example.com/r.git' is not an http(s) or git URL"]
