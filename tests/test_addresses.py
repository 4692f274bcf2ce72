"""``fplus.serving.http.addresses``: what ``--advertise``/``--listen`` accept, and which hosts are
loopback (a table each)."""

from __future__ import annotations

import pytest

from fplus.serving.http.addresses import BadAddress, host_or_ip, is_ip, is_loopback, is_loopback_url

HOSTS = [
    ("192.168.1.20", "192.168.1.20"),
    ("manager.factory.example", "manager.factory.example"),
    ("Manager.Factory.Example.", "manager.factory.example"),
    ("edge-1", "edge-1"),
    ("fd00::1", "[fd00::1]"),
    ("[fd00:0::1]", "[fd00::1]"),
]
NOT_HOSTS = ["", "http://manager:8700", "manager:8700", "bad host", "-edge", "edge-",
             "a..b", "x" * 64 + ".example", "user@host", "host/path", "[not-ip]"]
LOOPBACK = [
    ("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True), ("LOCALHOST.", True),
    ("api.localhost", True), ("::1", True), ("[::1]", True),
    ("192.168.1.20", False), ("manager.factory.example", False), ("10.0.0.1", False),
    ("notlocalhost", False), ("0.0.0.0", False),
]


@pytest.mark.parametrize(("given", "host"), HOSTS)
def test_host_or_ip_normalises_hosts(given: str, host: str) -> None:
    assert host_or_ip(given) == host


@pytest.mark.parametrize("given", NOT_HOSTS)
def test_host_or_ip_refuses_anything_else(given: str) -> None:
    with pytest.raises(BadAddress, match="is not a host name or an IP address"):
        host_or_ip(given)


@pytest.mark.parametrize(("host", "loopback"), LOOPBACK)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(("url", "loopback"), [
    ("http://127.0.0.1:8700/v1/cluster/x/bootstrap?token=t", True),
    ("https://[::1]:8700/", True),
    ("http://192.168.1.20:8700/", False),
    ("https://manager.factory.example/", False),
])
def test_is_loopback_url(url: str, loopback: bool) -> None:
    assert is_loopback_url(url) is loopback


@pytest.mark.parametrize(("host", "ip"), [("10.0.0.5", True), ("[fd00::1]", True),
                                          ("1.2.3", False), ("manager", False)])
def test_is_ip(host: str, ip: bool) -> None:
    assert is_ip(host) is ip
