"""A PostgreSQL pool whose connections are all in use answers the waiting request 503 and
stays open for the next one: congestion is not a database failure, so it must not trip the
breaker that makes every request of the next second fail at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fplus.config_store._storage import Storage, StorageBusy, open_storage
from fplus.config_store._storage.postgres import storage as pg_storage

pytestmark = pytest.mark.replicas


@pytest.fixture
def storage(postgres: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Storage]:
    monkeypatch.setattr(pg_storage, "POOL_TIMEOUT_S", 0.3)
    store = open_storage(postgres.create_database(), tmp_path, pool_size=1)
    yield store
    store.close()


def test_a_full_pool_refuses_the_waiter_but_not_the_next_request(storage: Storage) -> None:
    assert storage.reader().get_config("a", "b") is None  # the pool's one connection
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with storage.snapshot():
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        with pytest.raises(StorageBusy, match="1 connections stayed in use"):
            storage.reader().get_config("a", "b")
    finally:
        release.set()
        holder.join(10)
    assert storage.reader().get_config("a", "b") is None  # within the breaker's second
