"""SQLite connections under gevent: many request greenlets share one reader connection per
OS thread (a keep-alive client per edge must not cost a connection and its file
descriptors each), and a write open in one greenlet stays invisible to the others."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import gevent
import gevent.local
import pytest

from fplus.config_store._storage import TokenRow, open_storage


def _open_files(path: Path) -> int:
    """File descriptors of this process open on the database or its WAL/shm files."""
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        found += target.startswith(str(path))
    return found


def test_a_thousand_greenlets_share_one_reader_connection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # as in the server, where gevent patches threading.local into one per greenlet
    monkeypatch.setattr(threading, "local", gevent.local.local)
    storage = open_storage(None, tmp_path)
    database = next(tmp_path.glob("*.db"))
    with storage.write() as w:
        w.put_token(TokenRow("d", "p", "t", time.time() + 60))
    before = _open_files(database)

    def request() -> None:  # a keep-alive connection's greenlet, alive while it waits
        assert storage.reader().token("d") is not None
        gevent.sleep(0.05)

    gevent.joinall([gevent.spawn(request) for _ in range(1000)], raise_error=True)
    assert _open_files(database) - before <= 3  # one connection: the file, WAL and shm
    storage.close()


def test_an_open_write_is_invisible_to_readers_of_other_greenlets(tmp_path: Path) -> None:
    storage = open_storage(None, tmp_path)
    seen: list[object] = []

    def writer() -> None:
        with storage.write() as w:
            w.put_token(TokenRow("pending", "p", "t", time.time() + 60))
            gevent.sleep(0.1)  # yields inside the transaction

    def reader() -> None:
        gevent.sleep(0.02)
        seen.append(storage.reader().token("pending"))
        with storage.snapshot() as snap:
            seen.append(snap.token("pending"))

    gevent.joinall([gevent.spawn(writer), gevent.spawn(reader)], raise_error=True)
    assert seen == [None, None]
    assert storage.reader().token("pending") is not None  # committed now
    storage.close()
