"""What a fold offers to resume from: a WATCH's etag, a SEARCH's digest of the children it
holds (the server's :func:`selection_digest` of the same children), nothing when it cannot
say; and a 304 answer delivers nothing and keeps what the fold holds."""

from __future__ import annotations

from fplus.config_store.client._fold import MISSING, SearchDeltaFold, SearchFold, WatchFold
from fplus.serving.notify.wire import selection_digest

A, B = "a", "b"
UNCHANGED = {"status": 201, "response": {"status": 304}}


def ok(body: object, etag: str) -> dict:
    return {"status": 200, "body": body, "headers": {"etag": f'"{etag}"'}}


def full(**children: dict) -> dict:
    return {"response": {"status": 204}, "children": children}


def test_a_watch_offers_the_etag_it_delivered_and_keeps_it_through_a_304() -> None:
    fold = WatchFold()
    assert fold.resume_token() is None
    assert fold.apply({"response": ok({"v": 1}, "e1")}) == {"v": 1}
    assert fold.resume_token() == "e1"
    assert fold.apply({"response": {"status": 304, "headers": {"etag": '"e1"'}}}) is MISSING
    assert fold.resume_token() == "e1"
    assert fold.apply({"response": {"status": 404}}) is None
    assert fold.resume_token() is None


def test_a_search_offers_the_digest_of_the_children_it_holds_after_every_kind_of_update() -> None:
    fold = SearchDeltaFold()
    assert fold.resume_token() is None  # nothing known yet
    fold.apply(full(a=ok(1, "e1")))
    assert fold.resume_token() == selection_digest({A: "e1"})
    fold.apply({"child": B, "response": ok(2, "e2")})
    assert fold.resume_token() == selection_digest({A: "e1", B: "e2"})
    fold.apply({"child": A, "response": {"status": 404}})
    assert fold.resume_token() == selection_digest({B: "e2"})
    assert fold.apply(UNCHANGED) is MISSING
    assert fold.resume_token() == selection_digest({B: "e2"})


def test_a_search_holding_an_unreadable_child_or_refused_offers_nothing() -> None:
    fold = SearchDeltaFold()
    fold.apply(full(a=ok(1, "e1")))
    fold.apply({"child": A, "response": {"status": 500, "error": "cannot"}})
    assert fold.resume_token() is None
    fold.apply(full(a=ok(1, "e2")))
    assert fold.resume_token() == selection_digest({A: "e2"})
    fold.apply({"response": {"status": 403}})
    assert fold.resume_token() is None


def test_a_whole_state_search_keeps_its_state_through_a_304() -> None:
    fold = SearchFold()
    state = fold.apply(full(a=ok(1, "e1"), b=ok(2, "e2")))
    assert fold.apply(UNCHANGED) is MISSING
    assert fold.resume_token() == selection_digest(state.etags)
    assert dict(fold.apply({"child": A, "response": ok(3, "e3")})) == {A: 3, B: 2}


def test_the_digest_ignores_etag_quotes_and_order() -> None:
    assert selection_digest({A: '"e1"', B: "e2"}) == selection_digest({B: '"e2"', A: "e1"})
    assert selection_digest({A: "e1"}) != selection_digest({A: "e2"})
    assert selection_digest({}) != selection_digest({A: "e1"})
