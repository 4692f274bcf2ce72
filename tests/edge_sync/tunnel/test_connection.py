"""The tunnel's WebSocket: its URL, Retry-After, TLS with the CA of FPLUS_CA_FILE, and the
proxies of HTTPS_PROXY / NO_PROXY (websocket-client reads them; checked here for real)."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from fplus.config_store.client import ConfigStoreClient, MockTransport, reply
from fplus.edge_sync.retry import Backoff
from fplus.edge_sync.tunnel import Tunnel, tunnel_url
from fplus.edge_sync.tunnel.connection import MAX_RETRY_AFTER, retry_after
from fplus.serving.http.local_ca import StackCertificates
from fplus.tunnel.mux import Stream
from harness.servers import free_port
from tests.edge_sync.tunnel.fake_manager import ConnectProxy, FakeManager

pytestmark = pytest.mark.timeout(60)

CLUSTER = "0b7a6f5e-1c2d-4e3f-8a9b-0c1d2e3f4a5b"


def test_the_url_follows_the_cluster_managers_scheme_and_prefix() -> None:
    assert tunnel_url("https://cm.example:8443/", CLUSTER) == \
        f"wss://cm.example:8443/v1/cluster/{CLUSTER}/tunnel"
    assert tunnel_url("http://10.0.0.5/prefix", CLUSTER) == \
        f"ws://10.0.0.5/prefix/v1/cluster/{CLUSTER}/tunnel"


def test_retry_after_is_seconds_or_a_date_and_bounded() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    assert retry_after({"Retry-After": "7"}) == 7.0
    assert retry_after({"retry-after": format_datetime(now + timedelta(seconds=30),
                                                       usegmt=True)},
                       now=now.timestamp()) == pytest.approx(30.0)
    assert retry_after({"retry-after": "86400"}) == MAX_RETRY_AFTER
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None and retry_after(None) is None


def _echo(stream: Stream) -> None:
    stream.respond(200)
    stream.end()


@pytest.fixture
def tls_manager(certs: StackCertificates) -> Iterator[FakeManager]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs.cert, certs.key)
    server = FakeManager(tls=context).start()
    yield server
    server.stop()


@pytest.fixture
def proxy() -> Iterator[ConnectProxy]:
    server = ConnectProxy().start()
    yield server
    server.stop()


def _connects(url: str, tunnel_kwargs: dict[str, object] | None = None) -> Tunnel:
    """A tunnel to ``url`` once connected (the caller stops it)."""
    mock = MockTransport()
    mock.route("POST", "/token", reply(200, {"token": "t1"}))
    tokens = ConfigStoreClient("http://cs.test", "edge", "pw", send=mock, backoff=0)
    tunnel = Tunnel(tunnel_url(url, CLUSTER), tokens, _echo,
                    backoff=Backoff(0.05, 0.2, 1.0), **(tunnel_kwargs or {}))  # type: ignore[arg-type]
    threading.Thread(target=tunnel.run, args=(threading.Event(),), daemon=True).start()
    return tunnel


def test_tls_is_checked_against_fplus_ca_file(
        tls_manager: FakeManager, certs: StackCertificates,
        monkeypatch: pytest.MonkeyPatch) -> None:
    untrusting = _connects(tls_manager.url("https"))
    try:
        assert not untrusting.connected.wait(1.0)  # the system's CAs do not know ours
    finally:
        untrusting.close()
    monkeypatch.setenv("FPLUS_CA_FILE", str(certs.ca))
    tunnel = _connects(tls_manager.url("https"))
    try:
        assert tunnel.connected.wait(10)
        assert tls_manager.handshakes[-1].headers["authorization"] == "Bearer t1"
    finally:
        tunnel.close()


def test_https_proxy_carries_the_tunnel(
        tls_manager: FakeManager, certs: StackCertificates, proxy: ConnectProxy,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FPLUS_CA_FILE", str(certs.ca))
    monkeypatch.setenv("HTTPS_PROXY", f"http://edge:s%40cret@127.0.0.1:{proxy.port}")
    tunnel = _connects(tls_manager.url("https"))
    try:
        assert tunnel.connected.wait(10)
        (head,) = proxy.heads
        assert head.startswith(f"CONNECT 127.0.0.1:{tls_manager.port} HTTP/1.1\r\n")
        assert f"Proxy-Authorization: {ConnectProxy.basic('edge', 's@cret')}\r\n" in head
        assert tls_manager.handshakes[-1].headers["authorization"] == "Bearer t1"
    finally:
        tunnel.close()


def test_no_proxy_reaches_the_cluster_manager_directly(
        tls_manager: FakeManager, certs: StackCertificates,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FPLUS_CA_FILE", str(certs.ca))
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{free_port()}")  # nobody there
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    tunnel = _connects(tls_manager.url("https"))
    try:
        assert tunnel.connected.wait(10)
    finally:
        tunnel.close()


def test_a_plain_url_uses_http_proxy(
        proxy: ConnectProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeManager().start()
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    tunnel = _connects(server.url())
    try:
        assert tunnel.connected.wait(10)
        assert proxy.heads[0].startswith(f"CONNECT 127.0.0.1:{server.port} ")
    finally:
        tunnel.close()
        server.stop()
