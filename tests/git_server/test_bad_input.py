"""Garbage on the git endpoints gets a 4xx (or a git protocol error), never a 5xx,
and the server keeps serving."""

from __future__ import annotations

import base64
import gzip
import http.client
import os
from pathlib import Path

import pytest

from harness.servers import Api
from tests.git_server.conftest import ADMIN, Git, GitServer, Repo

UPLOAD_REQ = {"Content-Type": "application/x-git-upload-pack-request"}
RECEIVE_REQ = {"Content-Type": "application/x-git-receive-pack-request"}
ZERO = "0" * 40


def pkt(line: str | bytes) -> bytes:
    data = line.encode() if isinstance(line, str) else line
    return f"{len(data) + 4:04x}".encode() + data


def raw_request(server: GitServer, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """A request whose path is sent exactly as given (no client-side normalisation)."""
    auth = base64.b64encode(f"{ADMIN[0]}:{ADMIN[1]}".encode()).decode()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=15)
    try:
        conn.request(method, path, body=body,
                     headers={"Authorization": f"Basic {auth}", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def assert_still_serving(git: Git, server: GitServer, repo: Repo, work: Path) -> None:
    assert server.healthy()
    dest = work / f"after-{os.urandom(4).hex()}"
    git.clone(server.uuid_url(repo.uuid), dest)


@pytest.fixture
def pushed(git: Git, git_server: GitServer, repo: Repo, work: Path) -> str:
    """The repo with one commit on main; returns its sha."""
    sha = git.new_work(work / "seed")
    git.push(work / "seed", git_server.uuid_url(repo.uuid))
    return sha


GARBAGE = {
    "junk bytes to upload-pack": ("git-upload-pack", b"junk junk junk", UPLOAD_REQ),
    "NULs to upload-pack": ("git-upload-pack", b"\0" * 100_000, UPLOAD_REQ),
    "random bytes to upload-pack": ("git-upload-pack", os.urandom(64 * 1024), UPLOAD_REQ),
    "bad pkt-line length": ("git-upload-pack", b"zzzzwant " + b"1" * 40 + b"\n0000",
                            UPLOAD_REQ),
    "want of an unknown object": ("git-upload-pack",
                                  pkt("want " + "1" * 40 + "\n") + b"0000" + pkt("done\n"),
                                  UPLOAD_REQ),
    "junk claiming gzip": ("git-upload-pack", b"not gzip at all",
                           {**UPLOAD_REQ, "Content-Encoding": "gzip"}),
    "truncated gzip": ("git-upload-pack", gzip.compress(b"0032want " + b"1" * 40)[:12],
                       {**UPLOAD_REQ, "Content-Encoding": "gzip"}),
    "junk bytes to receive-pack": ("git-receive-pack", b"junk junk junk", RECEIVE_REQ),
    "empty body to receive-pack": ("git-receive-pack", b"", RECEIVE_REQ),
    "wrong content type": ("git-upload-pack", b"0000", {"Content-Type": "text/plain"}),
    "no content type": ("git-upload-pack", b"0000", {}),
}


@pytest.mark.parametrize("garbage", GARBAGE.values(), ids=GARBAGE.keys())
def test_garbage_posts_get_no_5xx(garbage: tuple[str, bytes, dict[str, str]], git: Git,
                                  git_server: GitServer, repo: Repo, pushed: str,
                                  root_git: Api, work: Path) -> None:
    service, body, headers = garbage
    r = root_git.post(f"/uuid/{repo.uuid}/{service}", data=body, headers=headers, timeout=15)
    assert r.status_code < 500, (r.status_code, r.content[:200])
    if r.status_code == 200:  # a git protocol answer: never a pack for garbage
        assert b"PACK" not in r.content
    assert root_git.get(f"/v1/status/{repo.uuid}").json() == {"main": pushed}
    assert_still_serving(git, git_server, repo, work)


def test_corrupt_pack_push_changes_nothing(git: Git, git_server: GitServer, repo: Repo,
                                           pushed: str, root_git: Api, work: Path) -> None:
    body = (pkt(f"{pushed} {'2' * 40} refs/heads/main\0report-status\n") + b"0000"
            + b"PACK\0\0\0\2\0\0\0\1" + os.urandom(200))
    r = root_git.post(f"/uuid/{repo.uuid}/git-receive-pack", data=body, headers=RECEIVE_REQ)
    assert r.status_code < 500
    assert b"unpack ok" not in r.content
    body = pkt(f"{ZERO} {'3' * 40} refs/heads/evil\0report-status\n") + b"0000"
    r = root_git.post(f"/uuid/{repo.uuid}/git-receive-pack", data=body, headers=RECEIVE_REQ)
    assert r.status_code < 500
    assert b"ok refs/heads/evil" not in r.content
    assert root_git.get(f"/v1/status/{repo.uuid}").json() == {"main": pushed}
    git.fsck(git_server.bare(repo.uuid))
    assert_still_serving(git, git_server, repo, work)


def test_gzipped_protocol_v2_request_is_answered(git_server: GitServer, repo: Repo,
                                                 pushed: str, root_git: Api) -> None:
    body = gzip.compress(pkt("command=ls-refs\n") + b"0001" + pkt("symrefs\n") + b"0000")
    r = root_git.post(f"/uuid/{repo.uuid}/git-upload-pack", data=body,
                      headers={**UPLOAD_REQ, "Content-Encoding": "gzip",
                               "Git-Protocol": "version=2"})
    assert r.status_code == 200
    assert f"{pushed} HEAD symref-target:refs/heads/main".encode() in r.content
    assert f"{pushed} refs/heads/main".encode() in r.content


WRONG_METHOD = [
    ("GET", "git-upload-pack"), ("GET", "git-receive-pack"), ("POST", "info/refs"),
    ("PUT", "info/refs"), ("DELETE", "HEAD"), ("PATCH", "git-upload-pack"),
]


@pytest.mark.parametrize(("method", "rest"), WRONG_METHOD)
def test_wrong_methods_get_4xx(method: str, rest: str, git_server: GitServer, repo: Repo,
                               root_git: Api) -> None:
    r = root_git.request(method, f"/uuid/{repo.uuid}/{rest}", data=b"0000",
                         headers=UPLOAD_REQ)
    assert 400 <= r.status_code < 500, (r.status_code, r.text)


@pytest.mark.parametrize("query", [
    "service=git-bogus", "service=", "service=git-upload-archive", "service=%00",
])
def test_unknown_services_get_4xx(query: str, git_server: GitServer, repo: Repo,
                                  root_git: Api) -> None:
    r = root_git.get(f"/uuid/{repo.uuid}/info/refs?{query}")
    assert 400 <= r.status_code < 500, (r.status_code, r.text)


TRAVERSAL = [
    "{u}/../../etc/passwd",
    "{u}/objects/../../../../etc/passwd",
    "{u}/%2e%2e/%2e%2e/etc/passwd",
    "{u}/..%2f..%2f..%2fetc%2fpasswd",
    "{u}/objects/info/..%2f..%2f..%2fconfig",
    "{u}/./HEAD",
    "{u}/objects/../HEAD",
    "{u}/\\..\\..\\etc\\passwd",
    "{u}/info/refs%00.txt?service=git-upload-pack",
    "{u}/HEAD%00",
    "/git/tests/..%2f..%2fetc/passwd",
]


@pytest.mark.parametrize("path", TRAVERSAL)
def test_path_traversal_gets_4xx(path: str, git: Git, git_server: GitServer, repo: Repo,
                                 pushed: str, work: Path) -> None:
    status, body = raw_request(git_server, "GET", path.format(u=f"/uuid/{repo.uuid}"))
    assert 400 <= status < 500, (status, body[:200])
    assert b"root:" not in body
    assert b"[core]" not in body
    assert git_server.healthy()


def test_server_is_healthy_after_all_the_garbage(git: Git, git_server: GitServer, repo: Repo,
                                                 pushed: str, work: Path) -> None:
    for path in TRAVERSAL:
        raw_request(git_server, "GET", path.format(u=f"/uuid/{repo.uuid}"))
    for service, body, headers in GARBAGE.values():
        raw_request(git_server, "POST", f"/uuid/{repo.uuid}/{service}", body, headers)
    assert_still_serving(git, git_server, repo, work)
    git.fsck(git_server.bare(repo.uuid))
