"""A push whose body stalls: the Git server times the client out, and no http-backend waits.

git http-backend waits forever for input cut short of its Content-Length, so the request,
its connection and the backend process used to stay open for good. Since the push limit, a
push body is read whole before http-backend starts, so a stalled one never starts it.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from harness.servers import ADMIN_PASSWORD, Api, ServiceProcess, git_server_process
from harness.stack import wait_for
from tests.git_server.conftest import make_repo

BODY_TIMEOUT = 2


@pytest.fixture
def git_server(fresh_store: ServiceProcess, tmp_path: Path) -> Iterator[ServiceProcess]:
    server = dataclasses.replace(git_server_process(tmp_path / "git", fresh_store.url),
                                 settings={"FPLUS_HTTP_BODY_TIMEOUT": str(BODY_TIMEOUT)})
    server.start()
    yield server
    server.stop()


def backends_of(server: ServiceProcess) -> list[int]:
    """The git-http-backend processes in the server's process group."""
    assert server.proc is not None
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            if b"http-backend" in cmdline and os.getpgid(int(entry.name)) == server.proc.pid:
                found.append(int(entry.name))
        except (OSError, ProcessLookupError):
            continue
    return found


def test_a_stalled_push_body_ends_the_request_and_its_backend(
        fresh_store: ServiceProcess, git_server: ServiceProcess) -> None:
    admin = Api(fresh_store.url, ("admin", ADMIN_PASSWORD))
    repo = make_repo(admin)
    refs = f"{git_server.url}/uuid/{repo.uuid}/info/refs?service=git-receive-pack"
    wait_for(lambda: requests.get(refs, auth=("admin", ADMIN_PASSWORD), timeout=5).ok,
             timeout=15, what="the repo served")
    credentials = base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()
    with socket.create_connection(("127.0.0.1", git_server.port), timeout=30) as sock:
        sock.sendall(
            f"POST /uuid/{repo.uuid}/git-receive-pack HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Basic {credentials}\r\n"
            "Content-Type: application/x-git-receive-pack-request\r\n"
            "Content-Length: 100000\r\n\r\n".encode() + b"0" * 100)
        # a push body is held back until it is whole (the push limit), so http-backend
        # never starts for a body that stalls: the server answers 408 on its own
        answer = sock.recv(65536)  # the server answers (or closes) instead of waiting forever
        assert not backends_of(git_server)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408"), answer[:80]
    assert not backends_of(git_server)
