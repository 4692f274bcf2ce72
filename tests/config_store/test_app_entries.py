"""The app-entry memory behind notify searches (a real SQLite store, no server): entries
are read once between changes, a change or a reload that is published drops them, and a
read that a publication overtook is not kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fplus.config_store._domain.common.events import ConfigChanged, EventBus, Resynced
from fplus.config_store._domain.configdb import app_entries
from fplus.config_store._domain.configdb.app_entries import AppEntries
from fplus.config_store._storage import Storage, open_storage

APP, OTHER = "a" * 8, "b" * 8


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[Storage]:
    store = open_storage(None, tmp_path)
    yield store
    store.close()


def _put(storage: Storage, app: str, obj: str, text: str) -> None:
    """Straight into the database: no event is published."""
    with storage.write() as w:
        w.put_config(app, obj, text, f"etag-{obj}-{len(text)}")


def _objects(entries: Any) -> list[str]:
    return [obj for obj, _, _ in entries]


def test_entries_are_kept_until_a_change_to_the_app_is_published(storage: Storage) -> None:
    events = EventBus()
    entries = AppEntries(storage, events)
    _put(storage, APP, "o1", "1")
    assert _objects(entries.get(APP)) == ["o1"]
    _put(storage, APP, "o2", "2")
    assert _objects(entries.get(APP)) == ["o1"]  # from memory: nothing was published
    events.publish([ConfigChanged(OTHER, "x", 1, "e")])
    assert _objects(entries.get(APP)) == ["o1"]  # another app's change
    events.publish([ConfigChanged(APP, "o2", 2, "etag-o2-1")])
    assert sorted(_objects(entries.get(APP))) == ["o1", "o2"]
    _put(storage, APP, "o3", "3")
    events.publish([Resynced()])
    assert sorted(_objects(entries.get(APP))) == ["o1", "o2", "o3"]


def test_a_read_overtaken_by_a_publication_is_not_kept(storage: Storage) -> None:
    events = EventBus()
    entries = AppEntries(storage, events)
    _put(storage, APP, "o1", "1")
    read = storage.reader

    class Overtaken:
        """Reads, then the change lands and is published before the read returns."""

        def config_entries(self, app: str) -> Any:
            found = read().config_entries(app)
            _put(storage, APP, "o2", "2")
            events.publish([ConfigChanged(APP, "o2", 2, "etag-o2-1")])
            return found

    storage.reader = Overtaken  # type: ignore[assignment,method-assign]
    assert _objects(entries.get(APP)) == ["o1"]
    storage.reader = read  # type: ignore[method-assign]
    assert sorted(_objects(entries.get(APP))) == ["o1", "o2"]


def test_a_large_app_is_read_each_time(storage: Storage,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_entries, "MAX_ENTRIES", 1)
    entries = AppEntries(storage, EventBus())
    _put(storage, APP, "o1", "1")
    _put(storage, APP, "o2", "2")
    assert len(entries.get(APP)) == 2
    _put(storage, APP, "o3", "3")
    assert len(entries.get(APP)) == 3
