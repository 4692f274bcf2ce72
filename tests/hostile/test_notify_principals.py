"""notify/v2 caps under one principal's many tokens, on the Config Store and the Git server.

Not reached by the probe: a principal may mint any number of tokens (``POST /token`` with
its password), so a cap counted per token or per connection bounds nothing. The Config
Store already counted connections per principal (held: kept here as a regression test with
a fresh token for every connection); the Git server's notify/v2 had no cap per principal at
all (fixed: ``git-server serve --notify-max-connections``, default 256). Subscriptions are
bounded per connection on both (``--notify-max-subscriptions``; 100 on the Git server), so
per principal by the product of the two.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import websocket

from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess, git_server_process
from tests.config_store.notify_helpers import get_token, open_socket, read_close
from tests.conftest import make_user

CAP = 3


def answer(url: str, token: str) -> tuple[websocket.WebSocket, str]:
    """A notify/v2 socket on ``url`` authenticated with ``token``, and the server's answer."""
    ws = open_socket(url)
    ws.send(f"Bearer {token}")
    return ws, ws.recv()


def check_cap(url: str, user: Api, other: Api) -> None:
    """``user`` holds CAP connections, each with a fresh token; one more (with yet another
    token) is refused; ``other`` is not affected; a closed connection frees its slot."""
    held = []
    for _ in range(CAP):
        ws, said = answer(url, get_token(user))
        assert said == "200"
        held.append(ws)
    ws, said = answer(url, get_token(user))
    assert said == "429"
    assert read_close(ws) == (1008, f"notify: too many connections for this principal "
                                    f"(max {CAP})")
    ws.close()
    ws, said = answer(url, get_token(other))
    assert said == "200"
    ws.close()
    held.pop().close()
    deadline, said = time.monotonic() + 10, ""
    while said != "200" and time.monotonic() < deadline:  # free once the server saw the close
        ws, said = answer(url, get_token(user))
        ws.close()
        time.sleep(0.2)
    assert said == "200"
    for ws in held:
        ws.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ConfigStoreProcess]:
    server = ConfigStoreProcess(tmp_path / "cs", extra_args=(
        "--notify-max-connections", str(CAP))).start()
    try:
        yield server
    finally:
        server.stop(signal.SIGKILL)


def test_config_store_counts_connections_per_principal_not_per_token(
        store: ConfigStoreProcess) -> None:
    admin = Api(store.url, ("admin", ADMIN_PASSWORD))
    _, user = make_user(admin)
    _, other = make_user(admin)
    check_cap(store.url, user, other)


def test_git_server_counts_connections_per_principal(tmp_path: Path,
                                                     store: ConfigStoreProcess) -> None:
    git = git_server_process(tmp_path / "git", store.url)
    git.extra_args += ("--notify-max-connections", str(CAP))
    git.start()
    try:
        admin = Api(store.url, ("admin", ADMIN_PASSWORD))
        _, user = make_user(admin)
        _, other = make_user(admin)
        check_cap(git.url, user, other)
    finally:
        git.stop()
