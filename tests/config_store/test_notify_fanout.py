"""The notify fan-out's own parts: updates encoded once for every subscriber, the outbox
that writes at once to a socket that keeps up while keeping its bounds for one that does
not, and the one thread that delivers for every session.
(The whole path, over real WebSockets, is in test_notify.py and tests/hostile/test_notify.py.)
"""

from __future__ import annotations

import functools
import json
import threading

import pytest

from fplus.config_store._domain.common.events import ConfigChanged
from fplus.config_store._domain.notify import FellBehind, Outbox
from fplus.config_store._domain.notify.encoding import Shared, encode, shared
from fplus.config_store._domain.notify.fanout import FanOut
from fplus.config_store._http.notify_ws import text_frame
from fplus.serving.notify.wire import dumps
from harness.stack import wait_for

APP, OBJ = "a" * 8 + "-0000-4000-8000-" + "0" * 12, "b" * 8 + "-0000-4000-8000-" + "0" * 12


def change(value: object, etag: str | None = "e1") -> ConfigChanged:
    return ConfigChanged(APP, OBJ, value, etag)


# -- encoding ---------------------------------------------------------------------------


def test_an_update_with_a_shared_response_is_the_text_dumps_gives() -> None:
    c = change({"z": [1, "é"], "a": None})
    update = {"status": 200, "response": shared(c), "uuid": "u1"}
    data, _ = encode(update)
    assert data.decode("ascii") == dumps({"status": 200, "uuid": "u1", "response": {
        "status": 200, "body": {"z": [1, "é"], "a": None}, "headers": {"etag": "e1"}}})
    head, _ = encode({"response": shared(c, head=True), "status": 200, "uuid": "u1"})
    assert json.loads(head)["response"] == {"status": 200, "headers": {"etag": "e1"}}
    gone, _ = encode({"response": shared(change(None, etag=None)), "status": 200})
    assert json.loads(gone)["response"] == {"status": 404}


def test_every_subscriber_of_a_change_shares_one_encoding() -> None:
    c = change({"n": 1})
    assert shared(c) is shared(c)
    assert shared(c) is not shared(c, head=True)
    assert shared(c) is not shared(change({"n": 1}))  # another change: its own


def test_equal_updates_have_equal_digests_and_different_ones_do_not() -> None:
    one, two = shared(change({"n": 1})), shared(change({"n": 1}))
    first = encode({"response": one, "status": 200, "uuid": "u"})
    assert encode({"response": two, "status": 200, "uuid": "u"}) == first
    assert encode({"response": shared(change({"n": 2})), "status": 200, "uuid": "u"})[1] \
        != first[1]
    assert encode({"response": one, "status": 200, "uuid": "v"})[1] != first[1]
    assert encode({"response": one.value, "status": 200, "uuid": "u"})[0] == first[0]


def test_a_value_that_cannot_be_encoded_raises_where_it_is_shared() -> None:
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        Shared({"body": deep})


# -- the outbox -------------------------------------------------------------------------


class Socket:
    """A socket that takes ``room`` bytes at once, then nothing (a client that stopped)."""

    def __init__(self, room: int) -> None:
        self.room, self.written = room, b""

    def send_now(self, data: bytes) -> int:
        taken = data[:self.room]
        self.room -= len(taken)
        self.written += taken
        return len(taken)


class Writer:
    """The outbox's writer in a thread of its own: what each :meth:`Outbox.get` returned."""

    def __init__(self, outbox: Outbox) -> None:
        self.outbox, self.got = outbox, list[object]()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            item = self.outbox.get(30)
            self.got.append(item)
            if item == "end":
                return

    def idle(self) -> None:
        wait_for(lambda: self.outbox.writer_waiting, what="the writer to wait")

    def end(self) -> list[object]:
        """Everything it was given, once it finished."""
        self.outbox.finish("end")
        self.thread.join(30)
        return self.got


def wired(room: int, max_bytes: int = 1000, max_items: int = 10) -> tuple[Outbox, Socket]:
    outbox, sock = Outbox(max_bytes, max_items), Socket(room)
    outbox.wire(text_frame, sock.send_now)
    return outbox, sock


def joined(buffers: object) -> bytes:
    assert isinstance(buffers, list)
    return b"".join(bytes(b) for b in buffers)


def test_a_client_that_keeps_up_is_written_to_at_once() -> None:
    outbox, sock = wired(room=1 << 20)
    writer = Writer(outbox)
    writer.idle()
    outbox.put(b'{"n":1}')
    outbox.put(b'{"n":2}')
    assert sock.written == text_frame(b'{"n":1}') + text_frame(b'{"n":2}')
    assert outbox.depth() == (0, 0)
    assert writer.end() == ["end"]  # the writer was never handed anything


def test_the_rest_of_an_update_part_written_goes_first_even_before_control() -> None:
    outbox, sock = wired(room=5)
    big = b'{"n":"' + b"x" * 200 + b'"}'
    outbox._idle = True  # as if the writer waited, and had not woken yet when it all came
    outbox.put(big)
    outbox.put(b'{"n":2}')  # queued behind the rest, not written
    outbox.put_control("pong")
    outbox._idle = False
    assert sock.written == text_frame(big)[:5]
    assert joined(outbox.get(0)) == text_frame(big)[5:]
    assert outbox.get(0) == "pong"
    assert joined(outbox.get(0)) == text_frame(b'{"n":2}')
    assert outbox.get(0) is None


def test_finishing_keeps_the_rest_of_a_frame_and_drops_what_waits() -> None:
    outbox, sock = wired(room=3)
    outbox._idle = True  # as if the writer waited, and had not woken yet when it all came
    outbox.put(b'{"n":1}')
    outbox.put(b'{"n":2}')
    outbox.finish("close")
    outbox.put(b'{"n":3}')  # nothing taken after the end
    outbox._idle = False
    assert sock.written + joined(outbox.get(0)) == text_frame(b'{"n":1}')
    assert outbox.get(0) == "close"
    assert outbox.get(0) is None


def test_a_client_that_stopped_reading_overflows_the_bounds() -> None:
    outbox, sock = wired(room=0, max_bytes=100, max_items=3)
    for n in range(3):
        outbox.put(b'{"n":%d}' % n)
    assert outbox.depth() == (3, 3 * len(text_frame(b'{"n":0}')))
    with pytest.raises(FellBehind, match="over 3 updates queued"):
        outbox.put(b'{"n":3}')
    assert outbox.depth() == (0, 0) and sock.written == b""
    outbox.put(b"x" * 500)  # an empty queue takes one update whatever its size
    with pytest.raises(FellBehind, match="queue over 100 bytes"):
        outbox.put(b'{"n":4}')


def test_a_writer_with_work_in_hand_is_not_written_around() -> None:
    outbox, sock = wired(room=1 << 20)
    outbox.put_control("ping")  # no writer waiting: everything queues, in order
    outbox.put(b'{"n":1}')
    outbox.put(b'{"n":2}')
    assert sock.written == b""
    assert outbox.get(0) == "ping"
    assert outbox.get(0) == [text_frame(b'{"n":1}'), text_frame(b'{"n":2}')]  # one batch


def test_frames_are_what_a_websocket_client_reads() -> None:
    for size in (0, 125, 126, 65535, 65536):
        frame = text_frame(b"x" * size)
        assert frame[0] == 0x81
        length = frame[1] & 0x7F
        head = 2 if length < 126 else 4 if length == 126 else 10
        assert len(frame) == head + size
        assert (int.from_bytes(frame[2:head], "big") if head > 2 else length) == size


# -- the fan-out thread ----------------------------------------------------------------


def test_fan_out_jobs_run_in_order_in_one_thread_and_outlive_a_failing_one() -> None:
    fanout, ran = FanOut(), list[tuple[int, str]]()

    def job(n: int) -> None:
        ran.append((n, threading.current_thread().name))
        if n == 1:
            raise RuntimeError("a bug in one delivery")

    for n in range(5):
        fanout.submit(functools.partial(job, n))
    wait_for(lambda: len(ran) == 5, what="every job")
    assert [n for n, _ in ran] == list(range(5))
    assert {name for _, name in ran} == {"notify-fanout"}
