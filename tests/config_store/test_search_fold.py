"""SearchFold: what a subscriber sees of a SEARCH, including children the server cannot serve."""

from __future__ import annotations

import pytest

from fplus.config_store.client._fold import SearchFold

A, B = "a", "b"


def ok(body: object, etag: str) -> dict:
    return {"status": 200, "body": body, "headers": {"etag": etag}}


def test_a_child_answered_with_a_server_error_keeps_its_last_body() -> None:
    fold = SearchFold()
    fold.apply({"response": {"status": 204}, "children": {A: ok(1, "e1"), B: ok(2, "e2")}})
    state = fold.apply({"child": A, "response": {"status": 500, "error": "cannot"}})
    assert dict(state) == {A: 1, B: 2} and state.unreadable == {A}
    state = fold.apply({"child": A, "response": ok(3, "e3")})
    assert dict(state) == {A: 3, B: 2} and state.unreadable == frozenset()


def test_a_full_answer_keeps_known_unreadable_children_and_names_new_ones() -> None:
    fold = SearchFold()
    fold.apply({"response": {"status": 204}, "children": {A: ok(1, "e1")}})
    state = fold.apply({"response": {"status": 204},
                        "children": {A: {"status": 500}, B: {"status": 500}}})
    assert dict(state) == {A: 1} and state.etags == {A: "e1"}
    assert state.unreadable == {A, B}


def test_a_child_that_is_gone_or_refused_is_dropped() -> None:
    fold = SearchFold()
    fold.apply({"response": {"status": 204}, "children": {A: ok(1, "e1"), B: ok(2, "e2")}})
    fold.apply({"child": A, "response": {"status": 404}})
    state = fold.apply({"child": B, "response": {"status": 403}})
    assert dict(state) == {} and state.unreadable == frozenset()


# -- deltas: the same state and the same changes as the whole-state fold ---------------------

import random  # noqa: E402

from fplus.config_store.client._fold import MISSING, SearchDelta, SearchDeltaFold, SearchMirror  # noqa: E402


class WholeStateOracle:
    """The behaviour before deltas, kept as the oracle: the whole-state fold (a copy of
    every child after every update) and the reconciler's diff of two successive states (by
    etag; by value without), a refusal ignored; two old faults fixed as noted below."""

    def __init__(self) -> None:
        self.children: dict = {}
        self.etags: dict = {}
        self.unreadable: set[str] = set()
        self.needs_full = False
        self.previous: dict = {}
        self.previous_etags: dict = {}

    def _fold(self, update: dict) -> bool:
        children, child, response = (update.get("children"), update.get("child"),
                                     update.get("response"))
        if isinstance(children, dict):
            readable = {k: e for k, e in children.items() if 200 <= e["status"] < 300}
            broken = {k for k, e in children.items() if e["status"] >= 500}
            kept = {k: self.children[k] for k in broken if k in self.children}
            self.etags = {k: self.etags.get(k) for k in kept} | {
                k: e.get("headers", {}).get("etag") for k, e in readable.items()}
            self.children = kept | {k: e["body"] for k, e in readable.items()}
            self.unreadable, self.needs_full = broken, False
        elif isinstance(child, str):
            if self.needs_full:
                return False
            if 200 <= response["status"] < 300:
                self.children[child] = response["body"]
                self.etags[child] = response.get("headers", {}).get("etag")
                self.unreadable.discard(child)
            elif response["status"] >= 500:
                self.unreadable.add(child)
            else:  # the old fold kept a deleted child in ``unreadable``, hiding its
                # deletion from the reconciler until the next full set: fixed with deltas
                self.children.pop(child, None)
                self.etags.pop(child, None)
                self.unreadable.discard(child)
        elif response["status"] >= 300:
            # the old fold emptied its map here while the reconciler kept its previous set
            # (and so forgot unreadable children at the next full set): modelled as the
            # reconciler's view, which keeps them
            self.needs_full = True
        else:
            return False
        return True

    def apply(self, update: dict) -> tuple[dict, set[str]] | None:
        """The state delivered and the clusters the reconciler queued; None: nothing."""
        if not self._fold(update) or self.needs_full:
            return None
        state, prev, prev_etags = dict(self.children), self.previous, self.previous_etags
        changed = {k for k in state.keys() | prev.keys()
                   if k not in state or k not in prev
                   or self.etags.get(k) != prev_etags.get(k)
                   or (self.etags.get(k) is None and state[k] != prev[k])}
        self.previous, self.previous_etags = state, dict(self.etags)
        return state, changed - self.unreadable


def _random_update(rng: random.Random, keys: list[str]) -> dict:
    def response() -> dict:
        roll = rng.random()
        if roll < 0.6:
            etag = rng.choice([None, f"e{rng.randrange(3)}"])
            headers = {"etag": etag} if etag else {}
            return {"status": 200, "body": {"v": rng.randrange(3)}, "headers": headers}
        return {"status": rng.choice([404, 403, 410, 500, 503])}

    roll = rng.random()
    if roll < 0.1:
        return {"response": {"status": 204},
                "children": {k: response() for k in rng.sample(keys, rng.randrange(len(keys)))}}
    if roll < 0.13:
        return {"response": {"status": 403}}
    if roll < 0.15:
        return {"response": {"status": 204}}  # nothing to fold
    return {"child": rng.choice(keys), "response": response()}


@pytest.mark.parametrize("seed", range(40))
def test_deltas_give_the_same_state_and_changes_as_the_whole_state(seed: int) -> None:
    """Random wire updates (full sets as after a reconnection, children changed, gone,
    refused or unreadable, a refusal of the whole app): a mirror fed deltas holds what the
    whole-state fold delivers, and names exactly the children the old diff named."""
    rng = random.Random(seed)
    keys = [f"k{i}" for i in range(6)]
    oracle, deltas, mirror = WholeStateOracle(), SearchDeltaFold(), SearchMirror()
    for step in range(300):
        update = _random_update(rng, keys)
        expected = oracle.apply(update)
        delta = deltas.apply(update)
        if delta is MISSING:
            assert expected is None, (step, update)
            continue
        if delta.refused:
            assert deltas.needs_full and expected is None
            continue  # the reconciler keeps what it knew; the next full set is compared to it
        changed = mirror.apply(delta) - mirror.unreadable
        assert expected is not None, (step, update)
        state, queued = expected
        assert changed == queued, (step, update)
        assert mirror.children == state and mirror.etags == oracle.etags, (step, update)
        assert mirror.unreadable == oracle.unreadable, (step, update)


def test_a_full_set_is_compared_with_what_was_known() -> None:
    """After a reconnection the first update is a full set: children changed, gone or new
    meanwhile are named; unchanged ones are not; an unreadable one keeps its body."""
    mirror = SearchMirror()
    assert mirror.apply(SearchDelta(True, {A: 1, B: 2}, {A: "e1", B: "e2"})) == {A, B}
    changed = mirror.apply(SearchDelta(True, {A: 1, "c": 3}, {A: "e1", "c": "e3"},
                                       unreadable=frozenset()))
    assert changed == {B, "c"} and mirror.children == {A: 1, "c": 3}
    changed = mirror.apply(SearchDelta(True, {"c": 3}, {"c": "e3"}, unreadable=frozenset({A})))
    assert changed == set() and mirror.children == {A: 1, "c": 3} and mirror.unreadable == {A}


def test_a_delta_costs_what_it_names() -> None:
    """A one-child delta touches one child: the mirror's dicts are updated in place, not
    rebuilt (the same objects before and after)."""
    mirror = SearchMirror()
    mirror.apply(SearchDelta(True, {f"k{i}": i for i in range(1000)},
                             {f"k{i}": f"e{i}" for i in range(1000)}))
    children, etags = mirror.children, mirror.etags
    assert mirror.apply(SearchDelta(False, {"k5": 50}, {"k5": "new"})) == {"k5"}
    assert mirror.apply(SearchDelta(False, removed=frozenset({"k6"}))) == {"k6"}
    assert mirror.children is children and mirror.etags is etags
    assert mirror.children["k5"] == 50 and "k6" not in mirror.children
