"""How a Kubernetes request and its answer travel as stream headers."""

from __future__ import annotations

import pytest

from fplus.tunnel import wire


def test_credentials_and_hop_by_hop_headers_never_cross() -> None:
    headers = wire.request_headers(
        "GET", "/api/v1/namespaces?limit=5",
        [("Authorization", "Bearer stolen"), ("Impersonate-Group", "system:masters"),
         ("Impersonate-User", "root"), ("Connection", "keep-alive"), ("Host", "cm"),
         ("X-Fplus-Level", "admin"), ("Accept", "application/json"), ("Cookie", "s=1")],
        level="view", principal="alice")
    request = wire.parse_request(headers)
    assert (request.method, request.path, request.level, request.principal) == (
        "GET", "/api/v1/namespaces?limit=5", "view", "alice")
    assert request.headers == [("accept", "application/json")]


def test_an_upgrade_loses_its_length_and_keeps_each_protocol_offer_apart() -> None:
    headers = wire.request_headers(
        "POST", "/api/v1/namespaces/a/pods/b/exec?command=true",
        [("Content-Length", "0"), ("Connection", "Upgrade"), ("Upgrade", "SPDY/3.1"),
         ("X-Stream-Protocol-Version", "v5.channel.k8s.io,v4.channel.k8s.io")],
        level="edit", principal="bob", upgrade="SPDY/3.1")
    request = wire.parse_request(headers)
    assert request.upgrade == "SPDY/3.1"
    assert request.headers == [("x-stream-protocol-version", "v5.channel.k8s.io"),
                               ("x-stream-protocol-version", "v4.channel.k8s.io")]


@pytest.mark.parametrize("bad", [
    [(":method", "GET"), (":path", "/x"), (wire.PRINCIPAL, "a")],
    [(":method", "GET"), (":path", "/x"), (wire.LEVEL, "root"), (wire.PRINCIPAL, "a")],
    [(":method", "GET"), (":path", "x"), (wire.LEVEL, "view"), (wire.PRINCIPAL, "a")],
    [(":method", "GET"), (":path", "/x"), (wire.LEVEL, "view")]])
def test_a_request_without_a_level_path_or_principal_is_refused(
        bad: list[tuple[str, str]]) -> None:
    with pytest.raises(wire.WireError):
        wire.parse_request(bad)


def test_a_101_travels_as_200_and_comes_back_as_101() -> None:
    sent = wire.response_headers(101, [("Upgrade", "SPDY/3.1"), ("Connection", "Upgrade"),
                                       ("X-Stream-Protocol-Version", "v4.channel.k8s.io")])
    assert sent[0] == (":status", "200")
    status, headers = wire.parse_response(200, [h for h in sent if h[0] != ":status"])
    assert status == 101
    assert headers == [("connection", "Upgrade"), ("upgrade", "SPDY/3.1"),
                       ("x-stream-protocol-version", "v4.channel.k8s.io")]
