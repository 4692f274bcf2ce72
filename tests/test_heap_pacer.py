"""The garbage collection pacer: what it freezes, when it collects everything, its settings."""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Iterator

import pytest

from fplus.serving.background.heap import HeapPacer, HeapSettings
from fplus.serving.http.httplimits import GC_FREEZE_EVERY, GC_FULL_EVERY, heap_settings


class Node:
    """A container that can sit in a reference cycle and be watched by a weak reference."""

    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> weakref.ref[Node]:
    """A two-node cycle no one holds; a weak reference to one node."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    gc.collect()
    yield
    gc.unfreeze()
    gc.collect()


def test_a_step_collects_young_cycles_and_freezes_the_survivors() -> None:
    pacer = HeapPacer(HeapSettings(freeze_every=60, full_every=3600), Clock())
    garbage = cycle()
    kept = Node()
    assert pacer.step() is False
    assert garbage() is None  # young cyclic garbage is collected before the freeze
    assert gc.get_freeze_count() > 0
    assert not any(o is kept for o in gc.get_objects())  # frozen: no collection walks it


def test_a_frozen_cycle_is_freed_only_by_the_full_collection() -> None:
    clock = Clock()
    pacer = HeapPacer(HeapSettings(freeze_every=60, full_every=3600), clock)
    held = [Node(), Node()]
    held[0].other, held[1].other = held[1], held[0]
    watched = weakref.ref(held[0])
    pacer.step()
    del held  # unreachable now, but frozen
    gc.collect()
    assert watched() is not None
    clock.now += 3599
    assert pacer.step() is False
    assert watched() is not None
    clock.now += 1
    assert pacer.step() is True
    assert watched() is None
    assert gc.get_freeze_count() > 0  # what survived is frozen again


def test_objects_made_after_a_freeze_are_collected_as_usual() -> None:
    pacer = HeapPacer(HeapSettings(), Clock())
    pacer.step()
    garbage = cycle()
    gc.collect()
    assert garbage() is None


def test_settings_default_and_from_the_environment() -> None:
    assert heap_settings({}) == HeapSettings(60.0, 3600.0)
    assert heap_settings({GC_FREEZE_EVERY: "0", GC_FULL_EVERY: "600"}) == HeapSettings(0.0, 600.0)


@pytest.mark.parametrize(("name", "raw"), [(GC_FREEZE_EVERY, "-1"), (GC_FREEZE_EVERY, "soon"),
                                           (GC_FREEZE_EVERY, "86401"), (GC_FULL_EVERY, "0"),
                                           (GC_FULL_EVERY, "nan")])
def test_a_bad_setting_is_one_line_naming_it(name: str, raw: str) -> None:
    with pytest.raises(SystemExit) as exc:
        heap_settings({name: raw})
    assert str(exc.value).startswith(f"{name}={raw!r}: must be a number of seconds")


def test_off_starts_nothing() -> None:
    pacer = HeapPacer(HeapSettings(freeze_every=0), Clock())
    pacer.start()
    assert gc.get_freeze_count() == 0
    pacer.stop()


def test_started_it_freezes_at_once_and_stops() -> None:
    pacer = HeapPacer(HeapSettings(freeze_every=3600), Clock())
    pacer.start()
    try:
        for _ in range(200):
            if gc.get_freeze_count() > 0:
                break
            time.sleep(0.01)
        assert gc.get_freeze_count() > 0
    finally:
        pacer.stop()
