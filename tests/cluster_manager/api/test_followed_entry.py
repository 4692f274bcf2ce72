"""FollowedEntry: served from memory while its WATCH follows, read over HTTP otherwise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fplus.cluster_manager.services.bootstrap.followed_entry import FollowedEntry


class FakeSub:
    def __init__(self) -> None:
        self.problem: str | None = "the Config Store has not answered the WATCH yet"


class FakeNotify:
    def __init__(self) -> None:
        self.sub = FakeSub()
        self.deliver: Callable[[Any], None] | None = None
        self.closed = False

    def watch(self, app: str, obj: str, callback: Callable[[Any], None]) -> FakeSub:
        self.deliver = callback
        return self.sub

    def close(self) -> None:
        self.closed = True


class CountingStore:
    def __init__(self) -> None:
        self.value: Any = {"v": "stored"}
        self.reads = 0

    def get_config(self, app: str, obj: str) -> Any:
        self.reads += 1
        return self.value


def test_served_from_memory_only_while_the_watch_follows() -> None:
    store, notify = CountingStore(), FakeNotify()
    entry = FollowedEntry(store, "app", "obj", notify=lambda _cs: notify)  # type: ignore[arg-type]
    assert entry.get() == ({"v": "stored"}, None) and store.reads == 1  # not answered yet
    assert notify.deliver is not None
    notify.deliver({"v": 1})
    notify.sub.problem = None
    value, version = entry.get()
    assert value == {"v": 1} and isinstance(version, int) and store.reads == 1
    assert entry.get() == (value, version)  # same delivery, same version
    notify.deliver({"v": 2})
    newer = entry.get()
    assert newer[0] == {"v": 2} and newer[1] != version and store.reads == 1
    notify.sub.problem = "not connected to notify/v2: refused"
    assert entry.get() == ({"v": "stored"}, None) and store.reads == 2  # never stale
    entry.close()
    assert notify.closed
