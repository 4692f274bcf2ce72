"""The longest-module-first order handed to pytest-xdist (tests/scheduling.py)."""

from __future__ import annotations

from dataclasses import dataclass

from tests.scheduling import longest_first


@dataclass
class Item:
    nodeid: str


def ids(items: list) -> list[str]:
    return [i.nodeid for i in items]


def test_longest_module_first_with_tests_in_their_own_order() -> None:
    items = [Item("a.py::one"), Item("b.py::one"), Item("a.py::two"), Item("c.py::one")]
    ordered = longest_first(items, {"a.py": 1.0, "b.py": 30.0, "c.py": 5.0})
    assert ids(ordered) == ["b.py::one", "c.py::one", "a.py::one", "a.py::two"]


def test_an_unrecorded_module_counts_as_the_median() -> None:
    items = [Item("new.py::t"), Item("short.py::t"), Item("mid.py::t"), Item("long.py::t")]
    ordered = longest_first(items, {"short.py": 1.0, "mid.py": 4.0, "long.py": 9.0})
    assert ids(ordered) == ["long.py::t", "mid.py::t", "new.py::t", "short.py::t"]


def test_without_records_the_order_is_by_path_so_every_worker_agrees() -> None:
    items = [Item("b.py::t"), Item("a.py::t2"), Item("a.py::t1")]
    assert ids(longest_first(items, {})) == ["a.py::t2", "a.py::t1", "b.py::t"]
