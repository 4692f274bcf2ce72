"""The edge's tunnel loop against a WebSocket server on loopback: the token, reconnecting,
backing off, Retry-After, a silent peer, stopping; and a request end to end."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from kubernetes import client

from fplus.config_store.client import ConfigStoreClient, MockTransport, reply
from fplus.edge_sync.retry import Backoff
from fplus.edge_sync.tunnel import Tunnel, edge_tunnel, tunnel_url
from fplus.tunnel import wire
from fplus.tunnel.mux import Mux, Stream
from tests.edge_sync.tunnel.conftest import SA_TOKEN
from tests.edge_sync.tunnel.fake_apiserver import FakeApiServer
from tests.edge_sync.tunnel.fake_manager import FakeManager

pytestmark = pytest.mark.timeout(60)

CLUSTER = "0b7a6f5e-1c2d-4e3f-8a9b-0c1d2e3f4a5b"
FAST = Backoff(initial=0.05, maximum=0.2, jitter=1.0)


def _echo(stream: Stream) -> None:
    stream.respond(200, [("x-path", stream.header(":path") or "")])
    while chunk := stream.read():
        stream.write(chunk)
    stream.end()


def _tokens(*tokens: str) -> ConfigStoreClient:
    """Edge Sync's Config Store client, its ``POST /token`` answered ``tokens`` in turn."""
    mock = MockTransport()
    mock.route("POST", "/token", *(reply(200, {"token": t, "expires_in": 3600})
                                   for t in tokens))
    return ConfigStoreClient("http://cs.test", "edge", "pw", send=mock, backoff=0)


@pytest.fixture
def run_tunnel() -> Iterator[Callable[..., Tunnel]]:
    """``run_tunnel(url, tokens=..., forward=_echo, **options)``: a Tunnel running in a
    thread, stopped at the end."""
    running: list[tuple[Tunnel, threading.Event, threading.Thread]] = []

    def run(url: str, tokens: ConfigStoreClient | None = None,
            forward: Callable[[Stream], None] = _echo, **options: object) -> Tunnel:
        tunnel = Tunnel(tunnel_url(url, CLUSTER), tokens or _tokens("t1"), forward,
                        **options)  # type: ignore[arg-type]
        stop = threading.Event()
        thread = threading.Thread(target=tunnel.run, args=(stop,), daemon=True)
        thread.start()
        running.append((tunnel, stop, thread))
        return tunnel

    yield run
    for tunnel, stop, thread in running:
        stop.set()
        tunnel.close()
        thread.join(10)
        assert not thread.is_alive()


@pytest.fixture
def manager() -> Iterator[FakeManager]:
    server = FakeManager().start()
    yield server
    server.stop()


def _echoes(mux: Mux, data: bytes = b"hi") -> bool:
    stream = mux.open([(":method", "POST"), (":path", "/echo"), (":scheme", "https"),
                       (":authority", "kube")])
    assert stream.response(timeout=10) == (200, [("x-path", "/echo")])
    writer = threading.Thread(target=lambda: (stream.write(data), stream.end()), daemon=True)
    writer.start()  # the echo answers as it reads: read while writing
    got = b""
    while chunk := stream.read(timeout=10):
        got += chunk
    writer.join(10)
    return got == data


def test_the_tunnel_carries_streams_and_sends_the_bearer_token(
        manager: FakeManager, run_tunnel: Callable[..., Tunnel]) -> None:
    tunnel = run_tunnel(manager.url())
    mux = manager.next_mux()
    assert _echoes(mux, b"x" * 1_000_000)  # many WebSocket messages each way
    (handshake,) = manager.handshakes
    assert handshake.target == f"/v1/cluster/{CLUSTER}/tunnel"
    assert handshake.headers["authorization"] == "Bearer t1"
    assert tunnel.connected.is_set()


def test_it_reconnects_within_a_second_or_so_after_a_connection_that_lasted_drops(
        manager: FakeManager, run_tunnel: Callable[..., Tunnel]) -> None:
    # The default back-off (full jitter, up to 1 s at first), counted again after each
    # connection that lasted (here 0.2 s): every drop is a first failure.
    run_tunnel(manager.url(), lasted=0.2)
    manager.next_mux()
    for _ in range(3):
        time.sleep(0.3)
        dropped = time.monotonic()
        manager.drop_all()
        mux = manager.next_mux()
        assert time.monotonic() - dropped < 1.5
        assert _echoes(mux)
    assert len(manager.handshakes) == 4


def test_it_connects_soon_after_the_server_comes_up(
        run_tunnel: Callable[..., Tunnel]) -> None:
    closed = socket.socket()  # the port is taken, and refuses: no Cluster Manager yet
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    tunnel = run_tunnel(f"http://127.0.0.1:{port}")
    time.sleep(0.3)  # a failure or more
    assert not tunnel.connected.is_set()
    closed.close()
    server = FakeManager(port=port).start()
    try:
        up = time.monotonic()
        assert _echoes(server.next_mux())
        assert time.monotonic() - up < 3.0
    finally:
        server.stop()


def test_a_503_with_retry_after_is_obeyed(run_tunnel: Callable[..., Tunnel]) -> None:
    server = FakeManager(plan=[(503, [("Retry-After", "1")]), "accept"]).start()
    try:
        run_tunnel(server.url(), backoff=FAST)
        assert _echoes(server.next_mux())
        first, second = server.handshakes
        assert 1.0 <= second.at - first.at < 2.0
    finally:
        server.stop()


def test_a_503_without_retry_after_backs_off_and_keeps_trying(
        run_tunnel: Callable[..., Tunnel]) -> None:
    server = FakeManager(plan=[(503, []), (503, []), (429, []), "accept"]).start()
    try:
        run_tunnel(server.url(), backoff=FAST)
        assert _echoes(server.next_mux())
        assert len(server.handshakes) == 4
    finally:
        server.stop()


def test_a_401_fetches_a_new_token_for_the_next_handshake(
        run_tunnel: Callable[..., Tunnel]) -> None:
    server = FakeManager(plan=[(401, []), "accept"]).start()
    try:
        run_tunnel(server.url(), tokens=_tokens("old", "new"), backoff=FAST)
        assert _echoes(server.next_mux())
        assert [h.headers["authorization"] for h in server.handshakes] == [
            "Bearer old", "Bearer new"]
    finally:
        server.stop()


def test_a_silent_server_is_dropped_and_dialled_again(
        run_tunnel: Callable[..., Tunnel]) -> None:
    server = FakeManager(plan=["silent", "accept"]).start()
    try:
        run_tunnel(server.url(), backoff=FAST, ping_interval=0.2, dead_after=0.6)
        assert _echoes(server.next_mux())
        first, second = server.handshakes
        assert 0.6 <= second.at - first.at < 3.0
    finally:
        server.stop()


def test_an_answered_ping_keeps_a_quiet_tunnel_up(
        manager: FakeManager, run_tunnel: Callable[..., Tunnel]) -> None:
    tunnel = run_tunnel(manager.url(), ping_interval=0.1, dead_after=0.5)
    mux = manager.next_mux()
    time.sleep(1.5)  # three times as long as silence is allowed: the pings are answered
    assert len(manager.handshakes) == 1 and tunnel.connected.is_set()
    assert _echoes(mux)


def test_the_cluster_managers_pings_keep_the_edge_from_pinging(
        manager: FakeManager, run_tunnel: Callable[..., Tunnel],
        monkeypatch: pytest.MonkeyPatch) -> None:
    edge_pings: list[float] = []
    ping = Mux.ping

    def counted(mux: Mux) -> None:
        if not mux.client:  # the edge's end
            edge_pings.append(time.monotonic())
        ping(mux)

    monkeypatch.setattr(Mux, "ping", counted)
    # the edge asks after a second of silence; the centre speaks ten times as often, so
    # even a loaded machine leaves it no silence that long
    tunnel = run_tunnel(manager.url(), ping_interval=1.0, dead_after=3.0)
    centre = manager.next_mux()
    stop = threading.Event()

    def ping_from_the_centre() -> None:
        while not stop.wait(0.1):
            centre.ping()

    pinger = threading.Thread(target=ping_from_the_centre, daemon=True)
    pinger.start()
    time.sleep(2.5)
    assert edge_pings == []  # heard every 0.1 s: nothing to ask
    stop.set()
    pinger.join()
    # quiet: the edge asks now, again and again, and its answered pings keep it up
    deadline = time.monotonic() + 15
    while len(edge_pings) < 3:
        assert time.monotonic() < deadline, f"the edge pinged {len(edge_pings)} times"
        time.sleep(0.1)
    assert len(manager.handshakes) == 1 and tunnel.connected.is_set()


def test_stopping_ends_the_connection(manager: FakeManager) -> None:
    tunnel = Tunnel(tunnel_url(manager.url(), CLUSTER), _tokens("t1"), _echo)
    stop = threading.Event()
    thread = threading.Thread(target=tunnel.run, args=(stop,), daemon=True)
    thread.start()
    mux = manager.next_mux()
    stop.set()
    thread.join(5)
    assert not thread.is_alive() and not tunnel.connected.is_set()
    assert mux.closed.wait(5)  # the Cluster Manager sees the edge go


def test_a_request_crosses_the_websocket_to_the_api_server(
        manager: FakeManager, run_tunnel: Callable[..., Tunnel], apiserver: FakeApiServer,
        kube_config: client.Configuration) -> None:
    tunnel = edge_tunnel(manager.url(), CLUSTER, _tokens("t1"), kube_config)
    stop = threading.Event()
    thread = threading.Thread(target=tunnel.run, args=(stop,), daemon=True)
    thread.start()
    try:
        mux = manager.next_mux()
        stream = mux.open(wire.request_headers(
            "GET", "/api/v1/namespaces", [("Authorization", "Bearer callers")],
            level="view", principal="carol"), end=True)
        assert stream.response(timeout=10)[0] == 200
        body = b""
        while chunk := stream.read(timeout=10):
            body += chunk
        assert json.loads(body)["kind"] == "NamespaceList"
        (got,) = apiserver.requests
        assert got.values("Authorization") == [f"Bearer {SA_TOKEN}"]
        assert got.header("Impersonate-User") == "fplus:view"
    finally:
        stop.set()
        tunnel.close()
        thread.join(10)
