"""HTTP-level limits against real services: JSON at the door, slow and idle clients, the
per-address connection cap, exact body limits for chunked bodies.

The Config Store runs with short ``FPLUS_HTTP_*`` timeouts, so a limit that does its job
shows within seconds where the probe saw connections held for 75 s or forever.
"""

from __future__ import annotations

import base64
import json
import os
import select
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.certs import make_cert
from harness.gitcli import bare
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess, run_command
from harness.stack import Stack, wait_for
from tests.cluster_manager.api.conftest import commission, report_edge
from tests.config_store.notify_helpers import RawNotify, entry_url
from tests.conftest import make_object, make_user

HEADER_TIMEOUT = 2
SHORT = {"FPLUS_HTTP_HEADER_TIMEOUT": str(HEADER_TIMEOUT), "FPLUS_HTTP_IDLE_TIMEOUT": "1",
         "FPLUS_HTTP_BODY_TIMEOUT": "2"}
GENEROUS = 10.0
"""Seconds within which a limit of 1-3 s must have acted (the probe saw 75 s or never)."""
LIMIT = 1024 * 1024
AUTH = "Basic " + base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()


def start_with(data: Path, env: dict[str, str], *args: str) -> ConfigStoreProcess:
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        return ConfigStoreProcess(data, extra_args=args).start()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConfigStoreProcess]:
    """A Config Store with short header, keep-alive and body timeouts."""
    server = start_with(tmp_path_factory.mktemp("http") / "data", SHORT)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConfigStoreProcess]:
    """A Config Store of 100 connections (so 50 per address) and a 3 s header timeout."""
    server = start_with(tmp_path_factory.mktemp("small") / "data",
                        {**SHORT, "FPLUS_HTTP_HEADER_TIMEOUT": "3"}, "--connections", "100")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def admin(store: ConfigStoreProcess) -> Api:
    return Api(store.url, ("admin", ADMIN_PASSWORD))


@pytest.fixture(scope="module")
def app(admin: Api) -> str:
    return make_object(admin, uuids.Class.App)


# -- raw sockets ----------------------------------------------------------------------


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    """A TCP connection to 127.0.0.1:port from the loopback address ``source``."""
    sock = socket.socket()
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    sock.settimeout(GENEROUS)
    return sock


def read_to_close(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (fails if it does not
    within GENEROUS seconds)."""
    parts = []
    try:
        while chunk := sock.recv(65536):
            parts.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(parts)


def trickle(sock: socket.socket, data: bytes, every: float = 0.3) -> bytes:
    """Send ``data`` a byte at a time until the server answers or closes; return what it
    sent until it closed."""
    deadline = time.monotonic() + GENEROUS
    for byte in data:
        assert time.monotonic() < deadline, "the server still reads a byte-at-a-time client"
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            break
        if select.select([sock], [], [], every)[0]:
            break
    return read_to_close(sock)


def request(method: str, path: str, body: bytes = b"", *, auth: bool = True,
            headers: dict[str, str] | None = None) -> bytes:
    """An HTTP/1.1 request's bytes (no Content-Length unless in ``headers``)."""
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if auth:
        lines.append(f"Authorization: {AUTH}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def error_of(answer: bytes) -> str:
    return json.loads(answer.partition(b"\r\n\r\n")[2])["error"]


def ping_from(server: ConfigStoreProcess, source: str) -> bytes:
    sock = connect(server.port, source)
    with sock:
        sock.sendall(request("GET", "/ping", auth=False, headers={"Connection": "close"}))
        return read_to_close(sock)


# -- JSON at the door -----------------------------------------------------------------


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [65, 962, 5000])
def test_deep_entries_are_refused_and_nothing_is_stored(admin: Api, app: str,
                                                         depth: int) -> None:
    obj = make_object(admin, uuids.Class.Device)
    r = admin.put(f"/v2/app/{app}/object/{obj}", data=nested(depth),
                  headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "deeper than 64" in r.json()["error"], r.text
    assert admin.get(f"/v2/app/{app}/object/{obj}").status_code == 404
    assert admin.put(f"/v2/app/{app}/object/{obj}", data=nested(63),
                     headers={"Content-Type": "application/json"}).status_code == 201


LONE = '"\\ud800"'


def test_lone_surrogates_are_refused_everywhere_a_body_is_parsed(admin: Api, app: str) -> None:
    obj = make_object(admin, uuids.Class.Device)
    entry = f"/v2/app/{app}/object/{obj}"
    r = admin.put(entry, data=LONE, headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "surrogate" in r.json()["error"], r.text
    assert admin.get(entry).status_code == 404
    assert admin.put(entry, json={"v": 1}).status_code == 201
    r = admin.patch(entry, data='{"v": ' + LONE + "}",
                    headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 400, r.text
    assert admin.get(entry).json() == {"v": 1}
    name = f"lone-{obj[:8]}"
    r = admin.post("/v2/principal", data='{"name": "' + name + '\\ud800", "password": "x"}',
                   headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    assert name not in json.dumps(admin.get("/v2/identity/login").json())
    uid, _ = make_user(admin)
    r = admin.put(f"/v2/principal/{uid}/password", data=LONE,
                  headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text


@pytest.mark.parametrize("body", [b"NaN", b'{"v": 1e400}', '{"v": 1}'.encode("utf-16"),
                                  b'{"v": "\xff"}'])
def test_bodies_that_are_not_utf8_json_are_refused(admin: Api, app: str, body: bytes) -> None:
    obj = make_object(admin, uuids.Class.Device)
    r = admin.put(f"/v2/app/{app}/object/{obj}", data=body,
                  headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    assert admin.get(f"/v2/app/{app}/object/{obj}").status_code == 404


# -- slow and idle clients ------------------------------------------------------------


def test_slow_headers_are_cut_off(store: ConfigStoreProcess) -> None:
    with connect(store.port) as sock:
        answer = trickle(sock, b"GET /ping HTTP/1.1\r\nX-Slow: " + b"a" * 1000)
    assert answer == b""  # closed without an answer
    assert status_of(ping_from(store, "127.0.0.1")) == 200


@pytest.mark.parametrize("authenticated", [True, False])
def test_a_body_trickled_a_byte_at_a_time_is_cut_off(store: ConfigStoreProcess, app: str,
                                                     authenticated: bool) -> None:
    head = request("PUT", f"/v2/app/{app}/object/{app}", auth=authenticated,
                   headers={"Content-Type": "application/json", "Content-Length": "500"})
    with connect(store.port) as sock:
        sock.sendall(head)
        answer = trickle(sock, b'{"v": "' + b"x" * 1000)
    if authenticated:
        assert status_of(answer) == 408, answer
        assert "stopped arriving" in error_of(answer)
    else:  # answered before its body is read; the rest is never waited for
        assert status_of(answer) == 401, answer


def test_a_stalled_body_is_cut_off(store: ConfigStoreProcess, app: str) -> None:
    head = request("PUT", f"/v2/app/{app}/object/{app}",
                   headers={"Content-Type": "application/json", "Content-Length": "100"})
    with connect(store.port) as sock:
        sock.sendall(head + b'{"v": ')
        answer = read_to_close(sock)
    assert status_of(answer) == 408, answer


def test_an_idle_kept_alive_connection_is_closed(store: ConfigStoreProcess) -> None:
    with connect(store.port) as sock:
        sock.sendall(request("GET", "/ping", auth=False))
        answer = read_to_close(sock)  # the answer, then the close once idle
    assert status_of(answer) == 200 and b"Connection: keep-alive" in answer


def test_an_upgraded_websocket_outlives_every_http_timeout(store: ConfigStoreProcess,
                                                           admin: Api, app: str) -> None:
    obj = make_object(admin, uuids.Class.Device)
    with RawNotify.login(admin) as notify:
        time.sleep(HEADER_TIMEOUT + 2)  # past the header, keep-alive and body timeouts
        sub = notify.watch(entry_url(app, obj))
        assert notify.next(sub)["response"] == {"status": 404}
        assert admin.put(f"/v2/app/{app}/object/{obj}", json={"v": 2}).status_code == 201
        assert notify.next(sub)["response"]["body"] == {"v": 2}


def test_one_address_cannot_take_every_connection(small: ConfigStoreProcess) -> None:
    with ExitStack() as held:
        for _ in range(50):  # the cap: half of --connections 100
            held.enter_context(connect(small.port, "127.0.0.5"))
        answer = ping_from(small, "127.0.0.5")
        assert status_of(answer) == 503 and b"Retry-After: 5" in answer, answer
        assert "too many connections from 127.0.0.5" in error_of(answer)
        assert status_of(ping_from(small, "127.0.0.6")) == 200
    wait_for(lambda: status_of(ping_from(small, "127.0.0.5")) == 200, GENEROUS,
             "the address served again once its connections closed")


def test_idle_sockets_do_not_starve_the_server(small: ConfigStoreProcess) -> None:
    with ExitStack() as held:
        idle = [held.enter_context(connect(small.port, f"127.0.0.{7 + i % 3}"))
                for i in range(150)]  # 150 > 100 connections, under the cap per address
        start = time.monotonic()
        assert status_of(ping_from(small, "127.0.0.10")) == 200
        assert time.monotonic() - start < GENEROUS
        assert all(read_to_close(sock) == b"" for sock in idle)  # each closed by the server


# -- exact body limits ----------------------------------------------------------------


def chunks(total: int, piece: int = 64 * 1024) -> Iterator[bytes]:
    """A JSON string of ``total`` bytes, in pieces (requests sends it chunked)."""
    yield b'"'
    for sent in range(1, total - 1, piece):
        yield b"x" * min(piece, total - 1 - sent)
    yield b'"'


def test_a_chunked_body_over_the_limit_is_413_like_a_sized_one(admin: Api, app: str) -> None:
    obj = make_object(admin, uuids.Class.Device)
    entry = f"/v2/app/{app}/object/{obj}"
    json_type = {"Content-Type": "application/json"}
    r = admin.put(entry, data=chunks(LIMIT + 1), headers=json_type)
    assert r.status_code == 413, r.text
    r = admin.put(entry, data=b"x" * (LIMIT + 1), headers=json_type)
    assert r.status_code == 413, r.text
    assert admin.get(entry).status_code == 404
    r = admin.put(entry, data=chunks(LIMIT), headers=json_type)  # exactly the limit
    assert r.status_code == 201, r.text
    assert len(admin.get(entry).json()) == LIMIT - 2


def test_a_bad_limit_setting_is_one_line_at_start_up(tmp_path: Path) -> None:
    env = {"FPLUS_ADMIN_PASSWORD": ADMIN_PASSWORD, "FPLUS_HTTP_BODY_TIMEOUT": "soon"}
    done = run_command("fplus.config_store.cli", "serve", "--data-dir", str(tmp_path / "d"),
                       "--port", "0", env=dict(os.environ, **env))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "FPLUS_HTTP_BODY_TIMEOUT='soon': must be a number of seconds above 0 (at most 86400)"]


# -- the Cluster Manager --------------------------------------------------------------


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at objects of their own."""
    return shared_stack


def test_the_cluster_api_refuses_deep_and_invalid_json(stack: Stack) -> None:
    root = Api(stack.manager.url, stack.admin.auth)
    config = f"/v2/app/{uuids.App.EdgeClusterConfiguration}"
    before = stack.admin.get(config).json()
    values = nested(100)
    for body in ('{"name": "deep", "namespace": "ns", "values": ' + values + "}",
                 '{"name": "lone", "namespace": ' + LONE + "}"):
        r = root.post("/v1/cluster", data=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 400, r.text
    assert stack.admin.get(config).json() == before


def test_a_chunked_seal_over_the_limit_is_413_and_commits_nothing(stack: Stack) -> None:
    from cryptography.hazmat.primitives.asymmetric import rsa

    cluster = commission(stack, "http-limits")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    report_edge(stack, cluster, kubeseal_cert=make_cert(key))
    root = Api(stack.manager.url, stack.admin.auth)
    repo = stack.repos / f"{cluster}.git"
    head = bare(repo, "rev-parse", "main").strip()
    url = f"/v1/cluster/{cluster}/secret/app/big/value"
    octets = {"Content-Type": "application/octet-stream"}
    r = root.put(url, data=chunks(LIMIT + LIMIT // 2), headers=octets)
    assert r.status_code == 413, r.text
    assert bare(repo, "rev-parse", "main").strip() == head
    r = root.put(url, data=chunks(1000), headers=octets)  # chunked within the limit: sealed
    assert r.status_code == 204, r.text
    assert bare(repo, "rev-parse", "main").strip() != head
