"""Notify fan-out latency: many notify/v2 subscribers of one entry, read by one thread.

The subscribers' sockets are read by a single thread waiting on all of them at once
(``selectors``), which stamps each read as it returns and parses the frames after the run:
what is timed is the Config Store's delivery, not the bench's own parsing. (One Python thread
per subscriber, as before, timed the client too: a hundred threads woken by one write queue
for the GIL, each parsing its frame with websocket-client before the next can stamp its own.)
"""

from __future__ import annotations

import json
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import websocket

TEXT, CLOSE = 0x1, 0x8
"""WebSocket opcodes the subscribers care about (pings are skipped: a run is shorter than
the server's ping interval)."""


@dataclass
class _Subscriber:
    sock: socket.socket
    buf: bytearray = field(default_factory=bytearray)
    reads: list[tuple[float, int]] = field(default_factory=list)
    """``(time of the read, end of what it brought in the stream)``: a frame's arrival is
    the first read that completed it."""

    def frames(self) -> Iterator[tuple[int, int, bytes]]:
        """``(opcode, end offset, payload)`` of every whole frame read (server frames are
        unmasked; no message is fragmented)."""
        buf, at = self.buf, 0
        while len(buf) - at >= 2:
            opcode, size, head = buf[at] & 0x0F, buf[at + 1] & 0x7F, 2
            if size == 126:
                size, head = struct.unpack_from("!H", buf, at + 2)[0], 4
            elif size == 127:
                size, head = struct.unpack_from("!Q", buf, at + 2)[0], 10
            if len(buf) - at < head + size:
                return
            yield opcode, at + head + size, bytes(buf[at + head:at + head + size])
            at += head + size

    def arrivals(self) -> Iterator[tuple[float, bytes]]:
        """``(arrival time, payload)`` of every text message received."""
        reads = iter(self.reads)
        stamp, upto = next(reads, (0.0, 0))
        for opcode, end, payload in self.frames():
            while upto < end:
                stamp, upto = next(reads)
            if opcode == TEXT:
                yield stamp, payload
            elif opcode == CLOSE:
                raise RuntimeError(f"notify subscriber closed by the server: {payload[2:]!r}")


def _subscribe(port: int, token: str, url: str, i: int) -> _Subscriber:
    ws = websocket.create_connection(f"ws://127.0.0.1:{port}/notify/v2", timeout=30)
    ws.send(f"Bearer {token}")
    assert ws.recv() == "200"
    ws.send(json.dumps({"uuid": f"00000000-0000-4000-8000-{i:012d}", "method": "WATCH",
                        "request": {"url": url}}))
    ws.recv()  # the initial state; websocket-client reads no further than its frame
    assert ws.sock is not None
    ws.sock.setblocking(False)
    return _Subscriber(ws.sock)


def _read_all(subs: list[_Subscriber], stop: threading.Event, cpu: list[float]) -> None:
    """Read every subscriber's socket until ``stop`` is set; the thread's CPU seconds are
    put in ``cpu``."""
    start = time.thread_time()
    with selectors.DefaultSelector() as sel:
        for sub in subs:
            sel.register(sub.sock, selectors.EVENT_READ, sub)
        while not stop.is_set():
            for key, _ in sel.select(timeout=0.5):
                sub = key.data
                data = sub.sock.recv(1 << 16)
                now = time.perf_counter()
                if not data:
                    sel.unregister(sub.sock)
                    continue
                sub.buf += data
                sub.reads.append((now, len(sub.buf)))
    cpu.append(time.thread_time() - start)


def notify_latency(port: int, token: str, url: str, subscribers: int, writes: int,
                   write: Callable[[int], None],
                   pause: float = 0.05) -> tuple[list[float], float]:
    """Milliseconds from the start of each ``write(seq)`` (which must make the entry at
    ``url`` hold ``{"seq": seq}``) to each subscriber's reading of that update, and the
    bench's own CPU milliseconds per write spent reading them."""
    subs = [_subscribe(port, token, url, i) for i in range(subscribers)]
    stop, cpu = threading.Event(), list[float]()
    reader = threading.Thread(target=_read_all, args=(subs, stop, cpu), daemon=True)
    reader.start()
    sent: dict[int, float] = {}
    try:
        for seq in range(writes):
            sent[seq] = time.perf_counter()
            write(seq)
            time.sleep(pause)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(
                sum(1 for _ in sub.frames()) >= writes for sub in subs):
            time.sleep(pause)
    finally:
        stop.set()
        reader.join()
        for sub in subs:
            sub.sock.close()
    samples = []
    for sub in subs:
        for stamp, payload in sub.arrivals():
            seq = json.loads(payload)["response"]["body"]["seq"]
            samples.append((stamp - sent[seq]) * 1000)
    if len(samples) != subscribers * writes:
        raise RuntimeError(f"{len(samples)} notify updates of {subscribers * writes} arrived")
    return samples, cpu[0] * 1000 / writes
