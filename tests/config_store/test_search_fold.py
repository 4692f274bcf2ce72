"""SearchFold: what a subscriber sees of a SEARCH, including children the server cannot serve."""

from __future__ import annotations

from config_store.client._fold import SearchFold

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
