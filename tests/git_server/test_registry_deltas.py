"""The repo registry follows its SEARCH as deltas: the map, the path index and the change
signal agree with the entries, whatever order the updates come in."""

from __future__ import annotations

from typing import Any

from fplus.config_store.client import SearchDelta
from fplus.git_server._domain.registry import RepoRegistry

A, B, C = "a", "b", "c"


class NoStore:
    """The registry never reads the Config Store when notify knows the answer."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the Config Store was asked: {name}")


def registry() -> tuple[RepoRegistry, list[int]]:
    changes: list[int] = []
    reg = RepoRegistry(NoStore(), on_change=lambda: changes.append(1))  # type: ignore[arg-type]
    return reg, changes


def test_full_set_then_changes_keep_the_map_and_the_path_index() -> None:
    reg, changes = registry()
    reg._apply(SearchDelta(True, {A: {"path": "g/one"}, B: {"path": "g/two"}, C: "not a dict"},
                           {A: "1", B: "2", C: "3"}))
    assert reg.configured() == [A, B] and reg.by_path("g/one") == [A] and len(changes) == 1
    reg._apply(SearchDelta(False, {B: {"path": "g/one"}}, {B: "2b"}))  # moved: no new repo
    assert reg.by_path("g/one") == [A, B] and len(changes) == 1
    reg._apply(SearchDelta(False, removed=frozenset({A})))
    assert reg.configured() == [B] and reg.by_path("g/one") == [B] and len(changes) == 2
    reg._apply(SearchDelta(False, {C: {"path": "g/three"}}, {C: "3b"}))  # now a repo
    assert reg.configured() == [B, C] and len(changes) == 3


def test_a_full_set_after_a_reconnection_names_only_what_changed_meanwhile() -> None:
    reg, changes = registry()
    reg._apply(SearchDelta(True, {A: {"path": "g/one"}, B: {"path": "g/two"}}, {A: "1", B: "2"}))
    reg._apply(SearchDelta(True, {A: {"path": "g/one"}, B: {"path": "g/two"}}, {A: "1", B: "2"}))
    assert len(changes) == 1
    reg._apply(SearchDelta(True, {B: {"path": "g/2"}}, {B: "2b"}))
    assert reg.configured() == [B] and reg.by_path("g/2") == [B] and len(changes) == 2
    assert reg.entries() == {B: {"path": "g/2"}}


def test_a_refusal_empties_the_registry_until_the_next_full_set() -> None:
    reg, changes = registry()
    reg._apply(SearchDelta(True, {A: {"path": "g/one"}}, {A: "1"}))
    reg._apply(SearchDelta(True, refused=True))
    assert reg.configured() == [] and reg.entries() == {} and len(changes) == 2
    reg._apply(SearchDelta(True, {A: {"path": "g/one"}}, {A: "1"}))
    assert reg.by_path("g/one") == [A] and len(changes) == 3
