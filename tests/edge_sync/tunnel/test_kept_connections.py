"""The forwarder's kept connections to the API server: reused while the server keeps them,
dropped when it closes them, a request lost to a connection the server closed sent again
only when sending it twice changes nothing."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kubernetes import client

from fplus.edge_sync.tunnel import ApiServer, Forwarder
from fplus.edge_sync.tunnel import apiserver as apiserver_module
from fplus.tunnel import wire
from fplus.tunnel.mux import Mux, Stream
from fplus.tunnel.transport import SocketTransport
from tests.edge_sync.tunnel.conftest import in_cluster_configuration
from tests.edge_sync.tunnel.fake_apiserver import FakeApiServer

pytestmark = pytest.mark.timeout(60)


@dataclass
class OneShotServer:
    """A plain HTTP/1.1 server on loopback that answers one request per connection and
    then closes it, without saying so (as a server closing a kept connection does)."""

    connections: int = 0
    requests: list[tuple[str, str, bytes]] = field(default_factory=list)
    _listener: socket.socket = field(default_factory=socket.socket)

    def start(self) -> OneShotServer:
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(8)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def stop(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._answer, args=(sock,), daemon=True).start()

    def _answer(self, sock: socket.socket) -> None:
        with sock:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            method, target = head.split(b" ")[:2]
            if b"transfer-encoding: chunked" in head.lower():
                while not rest.endswith(b"0\r\n\r\n"):
                    rest += sock.recv(65536)
            self.requests.append((method.decode(), target.decode(), rest))
            body = b"" if method == b"HEAD" else b'{"kind":"Status"}'
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 17\r\n\r\n" + body)
            threading.Event().wait(0.1)  # answered; closed a moment later


@pytest.fixture
def one_shot() -> Iterator[OneShotServer]:
    server = OneShotServer().start()
    yield server
    server.stop()


def _tunnel(forwarder: Forwarder) -> tuple[Mux, Mux]:
    a, b = socket.socketpair()
    centre = Mux(SocketTransport(a), client=True)
    edge = Mux(SocketTransport(b), client=False, on_stream=forwarder)
    for mux in (centre, edge):
        threading.Thread(target=mux.run, daemon=True).start()
    return centre, edge


def _ask(centre: Mux, method: str, path: str, body: bytes = b"",
         *extra: tuple[str, str]) -> tuple[int, bytes]:
    stream: Stream = centre.open(wire.request_headers(method, path, list(extra), level="edit",
                                                      principal="alice"), end=not body)
    if body:
        stream.write(body)
        stream.end()
    status, _ = stream.response(timeout=10)
    got = b""
    while chunk := stream.read(timeout=10):
        got += chunk
    return status, got


@pytest.fixture
def plain(one_shot: OneShotServer) -> Iterator[tuple[Mux, Forwarder]]:
    forwarder = Forwarder(ApiServer.from_configuration(client.Configuration(host=one_shot.url)))
    centre, edge = _tunnel(forwarder)
    yield centre, forwarder
    centre.close()
    edge.close()
    forwarder.close()


def test_successive_requests_share_one_kept_connection(
        tmp_path: Path, apiserver: FakeApiServer) -> None:
    forwarder = Forwarder(ApiServer.from_configuration(
        in_cluster_configuration(tmp_path, apiserver.port, apiserver.ca)))
    centre, edge = _tunnel(forwarder)
    try:
        for _ in range(5):
            status, body = _ask(centre, "GET", "/api/v1/namespaces")
            assert status == 200 and json.loads(body)["kind"] == "NamespaceList"
        assert apiserver.connections == 1
        # an answer that says Connection: close (http.server's to a HEAD it cannot serve)
        assert _ask(centre, "HEAD", "/api/v1/namespaces")[0] == 501
        assert _ask(centre, "GET", "/api/v1/namespaces")[0] == 200
        assert apiserver.connections == 2
    finally:
        centre.close()
        edge.close()
        forwarder.close()


def test_a_100_continue_is_passed_over(tmp_path: Path, apiserver: FakeApiServer) -> None:
    forwarder = Forwarder(ApiServer.from_configuration(
        in_cluster_configuration(tmp_path, apiserver.port, apiserver.ca)))
    centre, edge = _tunnel(forwarder)
    try:
        status, body = _ask(centre, "POST", "/api/v1/namespaces/default/configmaps", b"{}",
                            ("expect", "100-continue"))
        assert (status, json.loads(body)) == (201, {"got": 2})
    finally:
        centre.close()
        edge.close()
        forwarder.close()


@pytest.mark.parametrize("look_after", [0.0, 3600.0], ids=["looked-at", "taken-as-it-is"])
def test_a_get_the_closed_kept_connection_lost_goes_again_on_a_new_one(
        plain: tuple[Mux, Forwarder], one_shot: OneShotServer, look_after: float,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(apiserver_module, "LOOK_AFTER", look_after)
    centre, _ = plain
    assert _ask(centre, "GET", "/api/v1/namespaces") == (200, b'{"kind":"Status"}')
    threading.Event().wait(0.3)  # the server has closed its end
    assert _ask(centre, "GET", "/api/v1/pods") == (200, b'{"kind":"Status"}')
    threading.Event().wait(0.3)
    assert _ask(centre, "HEAD", "/api/v1/pods") == (200, b"")
    assert [(m, p) for m, p, _ in one_shot.requests] == [
        ("GET", "/api/v1/namespaces"), ("GET", "/api/v1/pods"), ("HEAD", "/api/v1/pods")]
    assert one_shot.connections == 3


def test_a_change_is_sent_only_on_a_connection_seen_open(
        plain: tuple[Mux, Forwarder], one_shot: OneShotServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(apiserver_module, "LOOK_AFTER", 3600.0)  # a GET would not look
    centre, _ = plain
    assert _ask(centre, "GET", "/api/v1/namespaces")[0] == 200
    threading.Event().wait(0.3)
    for method in ("POST", "DELETE"):
        status, _ = _ask(centre, method, "/api/v1/namespaces/default/configmaps/c",
                         b'{"a":1}' if method == "POST" else b"")
        assert status == 200
        threading.Event().wait(0.3)
    assert [(m, b) for m, _, b in one_shot.requests] == [
        ("GET", b""), ("POST", b'7\r\n{"a":1}\r\n0\r\n\r\n'), ("DELETE", b"")]
    assert one_shot.connections == 3
