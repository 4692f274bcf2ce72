"""A replica alone on its PostgreSQL database commits without ``NOTIFY`` (it would wake only
itself), notifies again once another replica listens, and logs every change either way.
Real PostgreSQL, two storages on one database, no server process."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from fplus.config_store._storage import open_storage
from fplus.config_store._storage.postgres.change_feed import ChangeFeed
from fplus.config_store._storage.postgres.storage import CHANNEL, PostgresStorage
from harness.stack import wait_for

pytestmark = pytest.mark.replicas


@pytest.fixture
def pair(postgres_url: str, tmp_path: Path) -> Iterator[tuple[PostgresStorage, PostgresStorage]]:
    """Two storages (replicas) on one fresh database."""
    a, b = open_storage(postgres_url, tmp_path), open_storage(postgres_url, tmp_path)
    assert isinstance(a, PostgresStorage) and isinstance(b, PostgresStorage)
    yield a, b
    a.close()
    b.close()


@pytest.fixture
def watcher(postgres_url: str) -> Iterator[psycopg.Connection]:
    """A plain connection listening to the channel (not counted as a replica)."""
    conn = psycopg.connect(postgres_url, autocommit=True)
    conn.execute(f"LISTEN {CHANNEL}")
    yield conn
    conn.close()


def _write(storage: PostgresStorage, app: str) -> str:
    obj = str(uuid.uuid4())
    with storage.write() as w:
        w.put_config(app, obj, "{}", uuid.uuid4().hex)
    return obj


def _notes(conn: psycopg.Connection, timeout: float, expected: int = 0) -> list[str]:
    """The payloads received within ``timeout`` seconds (or once ``expected`` came)."""
    return [note.payload for note in conn.notifies(timeout=timeout,
                                                   stop_after=expected or None)]


def _counted(feed: ChangeFeed, storage: PostgresStorage, others: bool) -> Any:
    def check() -> bool:
        feed.wait(0)  # listens (first time), counts the listeners
        return storage.others_listening is others
    return wait_for(check, what=f"others_listening {others}")


def test_a_lone_replica_skips_notify_until_another_listens(
        pair: tuple[PostgresStorage, PostgresStorage], watcher: psycopg.Connection) -> None:
    a, b = pair
    feed_a = ChangeFeed(a, count_every_s=0)
    feed_b = ChangeFeed(b, count_every_s=0)
    app = str(uuid.uuid4())
    try:
        start = feed_a.read(0).cursor or 0
        _counted(feed_a, a, others=False)
        alone = _write(a, app)
        assert _notes(watcher, 0.5) == []  # nobody woken
        _counted(feed_b, b, others=True)
        _counted(feed_a, a, others=True)
        together = _write(a, app)
        assert _notes(watcher, 30, expected=1) == [a.origin]
        # both commits are in the log for B to read, notified or not
        assert [c.b for _, _, c in feed_b.read(start).changes] == [alone, together]
        feed_b.close()
        _counted(feed_a, a, others=False)  # B gone: alone again
        _write(a, app)
        assert _notes(watcher, 0.5) == []
    finally:
        feed_a.close()
        feed_b.close()


def test_a_storage_without_a_feed_always_notifies(
        pair: tuple[PostgresStorage, PostgresStorage], watcher: psycopg.Connection) -> None:
    """Nobody counted the listeners (a tool writing without following), or the feed was
    closed: every commit notifies."""
    a, _ = pair
    _write(a, str(uuid.uuid4()))
    assert _notes(watcher, 30, expected=1) == [a.origin]
    feed = ChangeFeed(a, count_every_s=0)
    _counted(feed, a, others=False)
    feed.close()
    assert a.others_listening
    _write(a, str(uuid.uuid4()))
    assert _notes(watcher, 30, expected=1) == [a.origin]
