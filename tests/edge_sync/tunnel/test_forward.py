"""The edge's forwarder on real sockets: a client-side Mux (the Cluster Manager's end) over a
socket pair, the edge's server-side Mux running the forwarder, and a fake kube-apiserver
over HTTPS on loopback recording what reached it."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from fplus.edge_sync.tunnel import ApiServer, Forwarder
from fplus.tunnel import wire
from fplus.tunnel.mux import Mux, Stream
from fplus.tunnel.transport import SocketTransport
from harness.servers import free_port
from tests.edge_sync.tunnel.conftest import SA_TOKEN, in_cluster_configuration
from tests.edge_sync.tunnel.fake_apiserver import FakeApiServer

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def centre(kube_config: client.Configuration) -> Iterator[Mux]:
    """The Cluster Manager's end of a tunnel whose edge forwards to the fake API server."""
    client_mux, edge_mux, forwarder = _tunnel(kube_config)
    yield client_mux
    client_mux.close()
    edge_mux.close()
    forwarder.close()


def _tunnel(cfg: client.Configuration) -> tuple[Mux, Mux, Forwarder]:
    a, b = socket.socketpair()
    forwarder = Forwarder(ApiServer.from_configuration(cfg))
    client_mux = Mux(SocketTransport(a), client=True)
    edge_mux = Mux(SocketTransport(b), client=False, on_stream=forwarder)
    for mux in (client_mux, edge_mux):
        threading.Thread(target=mux.run, daemon=True).start()
    return client_mux, edge_mux, forwarder


def _headers(method: str, path: str, *extra: tuple[str, str], level: str = "edit",
             principal: str = "alice@example.com") -> list[tuple[str, str]]:
    return wire.request_headers(method, path, list(extra), level=level, principal=principal)


def _send(mux: Mux, headers: list[tuple[str, str]], body: bytes = b"") -> Stream:
    stream = mux.open(headers, end=not body)
    if body:
        stream.write(body)
        stream.end()
    return stream


def _read_all(stream: Stream) -> bytes:
    parts = []
    while chunk := stream.read(timeout=10):
        parts.append(chunk)
    return b"".join(parts)


def test_a_request_goes_as_edge_sync_impersonating_the_level_and_the_principal(
        centre: Mux, apiserver: FakeApiServer) -> None:
    # What a Cluster Manager would never send, crafted by hand: the caller's own token and
    # impersonation headers on the stream. The edge must drop them all.
    crafted = [(":method", "GET"), (":path", "/api/v1/namespaces?limit=5"),
               (":scheme", "https"), (":authority", "kube"),
               ("authorization", "Bearer the-callers-token"),
               ("impersonate-user", "system:admin"), ("impersonate-group", "system:masters"),
               ("impersonate-extra-scopes", "all"), ("accept", "application/json"),
               ("x-fplus-level", "view"), ("x-fplus-principal", "Zoë Smith/ops")]
    stream = _send(centre, crafted)
    status, headers = stream.response(timeout=10)
    assert status == 200
    assert json.loads(_read_all(stream))["kind"] == "NamespaceList"
    assert [v for k, v in headers if k == "warning"] == ['299 - "one"', '299 - "two"']

    (got,) = apiserver.requests
    assert (got.method, got.path) == ("GET", "/api/v1/namespaces?limit=5")
    assert got.values("Authorization") == [f"Bearer {SA_TOKEN}"]
    assert got.values("Impersonate-User") == ["fplus:view"]
    assert got.values("Impersonate-Extra-fplus-principal") == ["Zo%C3%AB%20Smith%2Fops"]
    assert got.values("Impersonate-Group") == got.values("Impersonate-Extra-scopes") == []
    assert got.header("Accept") == "application/json"


def test_a_principal_that_is_an_address_reads_as_it_is(
        centre: Mux, apiserver: FakeApiServer) -> None:
    stream = _send(centre, _headers("GET", "/api/v1/namespaces", level="admin"))
    assert stream.response(timeout=10)[0] == 200
    _read_all(stream)
    (got,) = apiserver.requests
    assert got.header("Impersonate-User") == "fplus:admin"
    assert got.header("Impersonate-Extra-fplus-principal") == "alice@example.com"


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "chunked"])
def test_a_request_body_arrives_whole(centre: Mux, apiserver: FakeApiServer,
                                      length: bool) -> None:
    body = json.dumps({"data": {"k": "v" * 300_000}}).encode()  # more than a window
    extra = [("content-type", "application/json")]
    if length:
        extra.append(("content-length", str(len(body))))
    stream = _send(centre, _headers("POST", "/api/v1/namespaces/default/configmaps", *extra),
                   body)
    status, _ = stream.response(timeout=10)
    assert status == 201
    assert json.loads(_read_all(stream)) == {"got": len(body)}
    (got,) = apiserver.requests
    assert got.body == body
    assert got.header("Content-Type") == "application/json"


def test_a_watch_streams_each_chunk_as_the_api_server_sends_it(
        centre: Mux, apiserver: FakeApiServer) -> None:
    stream = _send(centre, _headers("GET", "/api/v1/pods?watch=true"))
    status, headers = stream.response(timeout=10)
    assert status == 200 and ("transfer-encoding", "chunked") not in headers
    assert stream.read(timeout=10) == b'{"type":"ADDED"}\n'  # the server still holds the rest
    assert not apiserver.release.is_set()
    apiserver.release.set()
    assert _read_all(stream) == b'{"type":"MODIFIED"}\n'


def test_a_watch_the_cluster_manager_gives_up_closes_its_api_server_connection(
        centre: Mux, apiserver: FakeApiServer) -> None:
    stream = _send(centre, _headers("GET", "/api/v1/watch-forever"))
    assert stream.response(timeout=10)[0] == 200
    assert stream.read(timeout=10)
    stream.reset()
    assert apiserver.dropped.wait(10)


def test_a_refusal_of_the_api_server_passes_through(
        centre: Mux, apiserver: FakeApiServer) -> None:
    stream = _send(centre, _headers("GET", "/api/v1/secrets", level="view"))
    status, headers = stream.response(timeout=10)
    assert status == 403
    assert ("content-type", "application/json") in headers
    assert json.loads(_read_all(stream))["message"] == "fplus:view cannot list secrets"


def _upgrade(path: str) -> list[tuple[str, str]]:
    return wire.request_headers(
        "GET", path, [("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                      ("Sec-WebSocket-Version", "13"),
                      ("Sec-WebSocket-Protocol", "v5.channel.k8s.io"),
                      ("Authorization", "Bearer the-callers-token")],
        level="edit", principal="bob", upgrade="websocket")


def test_an_upgrade_pumps_bytes_both_ways(centre: Mux, apiserver: FakeApiServer) -> None:
    stream = centre.open(_upgrade("/api/v1/namespaces/default/pods/p/exec?command=sh"))
    status, headers = wire.parse_response(*stream.response(timeout=10))
    assert status == 101
    assert ("upgrade", "websocket") in headers
    assert ("sec-websocket-protocol", "v5.channel.k8s.io") in headers
    assert stream.read(timeout=10) == b"hello"  # sent with the 101, in the same packet
    for message in (b"ping", b"x" * 100_000):
        stream.write(message)
        got = b""
        while len(got) < len(message):
            got += stream.read(timeout=10)
        assert got == message
    stream.end()
    assert _read_all(stream) == b""  # the edge closes both ends once the client is done

    (got,) = apiserver.requests
    assert got.header("Connection") == "Upgrade" and got.header("Upgrade") == "websocket"
    assert got.header("Sec-WebSocket-Key") == "dGhlIHNhbXBsZSBub25jZQ=="
    assert got.values("Authorization") == [f"Bearer {SA_TOKEN}"]
    assert got.header("Impersonate-User") == "fplus:edit"
    assert got.header("Impersonate-Extra-fplus-principal") == "bob"


def test_an_upgrade_the_api_server_refuses_is_a_plain_answer(
        centre: Mux, apiserver: FakeApiServer) -> None:
    stream = centre.open(_upgrade("/api/v1/namespaces/default/pods/p/exec-forbidden"))
    status, _ = wire.parse_response(*stream.response(timeout=10))
    assert status == 403
    assert json.loads(_read_all(stream))["reason"] == "Forbidden"


def test_a_stream_without_a_level_is_a_400_and_reaches_nothing(
        centre: Mux, apiserver: FakeApiServer) -> None:
    stream = _send(centre, [(":method", "GET"), (":path", "/api/v1/namespaces"),
                            (":scheme", "https"), (":authority", "kube"),
                            ("x-fplus-principal", "alice")])
    status, headers = stream.response(timeout=10)
    assert status == 400 and ("content-type", "application/json") in headers
    body = json.loads(_read_all(stream))
    assert (body["kind"], body["code"]) == ("Status", 400)
    assert "x-fplus-level" in body["message"]
    assert apiserver.requests == []


def test_an_unreachable_api_server_is_a_502(tmp_path: Path, apiserver: FakeApiServer) -> None:
    cfg = in_cluster_configuration(tmp_path, free_port(), apiserver.ca)
    client_mux, edge_mux, forwarder = _tunnel(cfg)
    try:
        for headers in (_headers("GET", "/api/v1/namespaces"),
                        _upgrade("/api/v1/namespaces/default/pods/p/exec")):
            stream = _send(client_mux, headers)
            status, _ = stream.response(timeout=10)
            assert status == 502
            body = json.loads(_read_all(stream))
            assert body["reason"] == "BadGateway" and "unreachable" in body["message"]
    finally:
        client_mux.close()
        edge_mux.close()
        forwarder.close()


def test_many_requests_share_the_tunnel_while_a_watch_is_open(
        centre: Mux, apiserver: FakeApiServer) -> None:
    watch = _send(centre, _headers("GET", "/api/v1/pods?watch=true"))
    assert watch.read(timeout=10)
    started = time.monotonic()
    for _ in range(20):
        stream = _send(centre, _headers("GET", "/api/v1/namespaces"))
        assert stream.response(timeout=10)[0] == 200
        _read_all(stream)
    assert time.monotonic() - started < 10
    assert apiserver.connections <= 3  # the watch's, and kept ones for the rest
    apiserver.release.set()
    assert _read_all(watch) == b'{"type":"MODIFIED"}\n'
