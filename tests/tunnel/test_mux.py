"""The HTTP/2 multiplexer on a real socket pair: streams, flow control, resets, closing."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from fplus.tunnel.mux import LINGER, STREAM_WINDOW, Mux, Stream, StreamClosed, StreamReset
from fplus.tunnel.transport import SocketTransport

pytestmark = pytest.mark.timeout(30)


def _pair(serve: Callable[[Stream], None]) -> tuple[Mux, Mux]:
    a, b = socket.socketpair()
    client = Mux(SocketTransport(a), client=True)
    server = Mux(SocketTransport(b), client=False, on_stream=serve)
    for mux in (client, server):
        threading.Thread(target=mux.run, daemon=True).start()
    return client, server


@pytest.fixture
def muxes(request: pytest.FixtureRequest) -> Iterator[tuple[Mux, Mux]]:
    client, server = _pair(request.param)
    yield client, server
    client.close()
    server.close()


def _echo(stream: Stream) -> None:
    stream.respond(200, [("x-path", stream.header(":path") or "")])
    while chunk := stream.read():
        stream.write(chunk)
    stream.end()


def _request(path: str) -> list[tuple[str, str]]:
    return [(":method", "POST"), (":path", path), (":scheme", "https"), (":authority", "t")]


def _read_all(stream: Stream) -> bytes:
    parts = []
    while chunk := stream.read(timeout=10):
        parts.append(chunk)
    return b"".join(parts)


@pytest.mark.parametrize("muxes", [_echo], indirect=True)
def test_a_stream_carries_headers_and_a_body_larger_than_its_window(
        muxes: tuple[Mux, Mux]) -> None:
    client, _ = muxes
    body = bytes(range(256)) * (3 * STREAM_WINDOW // 256)
    stream = client.open(_request("/echo"))
    assert stream.response(timeout=10) == (200, [("x-path", "/echo")])
    def upload() -> None:
        stream.write(body)
        stream.end()

    writer = threading.Thread(target=upload)
    writer.start()
    assert _read_all(stream) == body
    writer.join(10)


def _hold(stream: Stream) -> None:
    """Answers, then sends more than a window on /slow (the client never reads it) and
    echoes on any other path."""
    if stream.header(":path") == "/slow":
        stream.respond(200)
        with contextlib.suppress(TimeoutError, StreamClosed):
            stream.write(b"x" * (4 * STREAM_WINDOW), timeout=20)
        return
    _echo(stream)


@pytest.mark.parametrize("muxes", [_hold], indirect=True)
def test_a_stream_nobody_reads_stalls_only_itself(muxes: tuple[Mux, Mux]) -> None:
    client, _server = muxes
    slow = client.open(_request("/slow"), end=True)
    slow.response(timeout=10)
    deadline = time.monotonic() + 10
    while slow.buffered < STREAM_WINDOW and time.monotonic() < deadline:
        time.sleep(0.01)
    assert slow.buffered == STREAM_WINDOW  # the window, and not a byte more, was sent

    fast = client.open(_request("/fast"))
    fast.response(timeout=10)
    fast.write(b"hello")
    fast.end()
    assert _read_all(fast) == b"hello"
    assert slow.buffered == STREAM_WINDOW


@pytest.mark.parametrize("muxes", [_hold], indirect=True)
def test_a_reset_stream_frees_its_window_and_its_writer(muxes: tuple[Mux, Mux]) -> None:
    client, server = muxes
    slow = client.open(_request("/slow"), end=True)
    slow.response(timeout=10)
    slow.reset()
    deadline = time.monotonic() + 10
    while server.streams and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not server.streams and not client.streams
    with pytest.raises(StreamClosed):
        slow.write(b"more")


@pytest.mark.parametrize("muxes", [_echo], indirect=True)
def test_closing_the_connection_resets_every_open_stream(muxes: tuple[Mux, Mux]) -> None:
    client, server = muxes
    stream = client.open(_request("/echo"))
    stream.response(timeout=10)
    server.close()
    with pytest.raises(StreamReset):
        stream.read(timeout=10)
    assert client.closed.wait(10)
    with pytest.raises(StreamClosed):
        client.open(_request("/after"))


@pytest.mark.parametrize("muxes", [_echo], indirect=True)
def test_many_streams_share_the_connection(muxes: tuple[Mux, Mux]) -> None:
    client, _ = muxes
    results: dict[int, bytes] = {}

    def one(n: int) -> None:
        stream = client.open(_request(f"/{n}"))
        stream.response(timeout=10)
        stream.write(str(n).encode() * 1000)
        stream.end()
        results[n] = _read_all(stream)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert results == {n: str(n).encode() * 1000 for n in range(50)}
    assert not client.streams


@pytest.mark.parametrize("muxes", [_echo], indirect=True)
def test_a_ping_is_answered(muxes: tuple[Mux, Mux]) -> None:
    client, _ = muxes
    before = client.last_heard
    time.sleep(0.05)
    client.ping()
    deadline = time.monotonic() + 10
    while client.last_heard == before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.last_heard > before


@pytest.mark.parametrize("muxes", [_echo], indirect=True)
def test_an_idle_connection_holds_no_writer_and_wakes_one_to_send(
        muxes: tuple[Mux, Mux]) -> None:
    client, server = muxes
    stream = client.open(_request("/before"), end=True)
    assert _read_all(stream) == b""
    deadline = time.monotonic() + LINGER + 10
    while (client.writer_running or server.writer_running) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not client.writer_running and not server.writer_running
    stream = client.open(_request("/after"))
    stream.write(b"again")
    stream.end()
    assert _read_all(stream) == b"again"


def test_a_peer_ending_the_connection_closes_the_transport() -> None:
    a, b = socket.socketpair()
    client = Mux(SocketTransport(a), client=True)
    server = Mux(SocketTransport(b), client=False, on_stream=_echo)
    runner = threading.Thread(target=client.run, daemon=True)
    runner.start()
    threading.Thread(target=server.run, daemon=True).start()
    server.close()  # GOAWAY, then its socket closes
    runner.join(10)
    assert client.closed.is_set() and not runner.is_alive()
    deadline = time.monotonic() + 10
    while a.fileno() != -1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert a.fileno() == -1  # the client's transport was closed too


@pytest.mark.parametrize("muxes", [_hold], indirect=True)
def test_a_reset_here_wakes_a_read_waiting_on_the_stream(muxes: tuple[Mux, Mux]) -> None:
    client, _ = muxes
    stream = client.open(_request("/hang-on-echo"))
    stream.response(timeout=10)
    failed: list[BaseException] = []

    def wait() -> None:
        try:
            stream.read()  # no timeout: only the reset ends it
        except StreamReset as exc:
            failed.append(exc)

    reader = threading.Thread(target=wait)
    reader.start()
    time.sleep(0.2)
    stream.reset()
    reader.join(5)
    assert not reader.is_alive() and failed


@pytest.mark.parametrize("muxes", [_echo], indirect=True)
def test_an_answer_already_ended_is_taken_whole_and_one_still_coming_is_not(
        muxes: tuple[Mux, Mux]) -> None:
    client, _ = muxes
    stream = client.open(_request("/whole"))
    stream.response(timeout=10)
    assert stream.received_whole() is None  # the echo has not ended: we have not
    stream.write(b"part one, ")
    stream.write(b"part two")
    stream.end()
    deadline = time.monotonic() + 10
    while not stream.remote_ended and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stream.received_whole() == b"part one, part two"
    assert not client.streams
