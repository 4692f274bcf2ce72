"""notify/v2 caps under one principal's many tokens, on the Config Store and the Git server.

Not reached by the probe: a principal may mint any number of tokens (``POST /token`` with
its password), so a cap counted per token or per connection bounds nothing. The Config
Store already counted connections per principal (held: kept here as a regression test with
a fresh token for every connection); the Git server's notify/v2 had no cap per principal at
all (fixed: ``git-server serve --notify-max-connections``, default 256). Subscriptions were
bounded per connection only, so one principal could hold 256 times 1,000 on the Config Store;
now also per principal over all its connections (fixed:
``--notify-max-principal-subscriptions``, default 10,000).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import websocket

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess, git_server_process
from tests.config_store.notify_helpers import (
    RawNotify,
    entry_url,
    get_token,
    open_socket,
    read_close,
)
from tests.conftest import grant, make_object, make_user

CAP = 3
PER_CONNECTION, PER_PRINCIPAL = 5, 8


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


@pytest.fixture
def subs_store(tmp_path: Path) -> Iterator[ConfigStoreProcess]:
    server = ConfigStoreProcess(tmp_path / "cs", extra_args=(
        "--notify-max-subscriptions", str(PER_CONNECTION),
        "--notify-max-principal-subscriptions", str(PER_PRINCIPAL))).start()
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


def test_config_store_counts_subscriptions_per_principal(
        subs_store: ConfigStoreProcess) -> None:
    store = subs_store
    admin = Api(store.url, ("admin", ADMIN_PASSWORD))
    app, obj = make_object(admin, uuids.Class.App), make_object(admin, uuids.Class.Device)
    principal, user = make_user(admin)
    other_uuid, other = make_user(admin)
    for who in (principal, other_uuid):
        grant(admin, who, uuids.ConfigDBPerm.ReadApp, app)
    url = entry_url(app, obj)
    with RawNotify(store.url, get_token(user)) as first, \
            RawNotify(store.url, get_token(user)) as second, \
            RawNotify(store.url, get_token(other)) as third:
        subs = [first.watch(url) for _ in range(PER_CONNECTION)]
        assert all(first.next(sub)["status"] == 201 for sub in subs)
        more = [second.watch(url) for _ in range(PER_PRINCIPAL - PER_CONNECTION)]
        assert all(second.next(sub)["status"] == 201 for sub in more)
        refused = second.next(second.watch(url))
        assert refused["status"] == 429
        assert refused["error"] == (
            f"too many subscriptions for this principal (max {PER_PRINCIPAL})")
        assert third.next(third.watch(url))["status"] == 201  # its own allowance
        first.close_sub(subs[0])
        assert first.next(subs[0])["status"] == 410
        assert second.next(second.watch(url))["status"] == 201  # the freed one
