"""notify/v2 across replicas: WATCH and SEARCH subscribed on one replica follow writes made
through the other, deletes included, and never show an older value after a newer one."""

from __future__ import annotations

import threading

from fplus.config_store import uuids
from fplus.serving.notify.wire import selection_digest
from harness.servers import Api
from tests.config_store.notify_helpers import RawNotify, app_parent, entry_url
from tests.config_store.test_notify import delete, ok, patch, put
from tests.conftest import make_class, make_object

from .pair import Replicas, known_to


def app_and_object(pair: Replicas) -> tuple[str, str]:
    """A new app and device made through A, once B knows them too."""
    a = pair.admin(0)
    app, obj = make_object(a, uuids.Class.App), make_object(a, uuids.Class.Device)
    known_to(pair.admin(1), app, obj)
    return app, obj


def counts_until(ws: RawNotify, sub: str, last: int) -> list[int | None]:
    """The ``n`` of each update of ``sub`` until one carries ``n == last`` (None: a 404)."""
    seen: list[int | None] = []
    while not seen or seen[-1] != last:
        body = ws.next(sub)["response"].get("body")
        seen.append(body["n"] if isinstance(body, dict) else None)
    return seen


def assert_never_back(seen: list[int | None]) -> None:
    values = [n for n in seen if n is not None]
    assert values == sorted(values), f"an older value after a newer one: {seen}"


def test_watch_and_search_on_b_follow_put_patch_and_delete_through_a(pair: Replicas) -> None:
    a = pair.admin(0)
    app, obj = app_and_object(pair)
    with RawNotify.login(pair.admin(1)) as ws:
        watch, search = ws.watch(entry_url(app, obj)), ws.search(app_parent(app))
        assert ws.next(watch) == {"status": 201, "response": {"status": 404}, "uuid": watch}
        assert ws.next(search)["children"] == {}

        etag = put(a, app, obj, {"v": 1})
        assert ws.next(watch) == {"status": 200, "response": ok({"v": 1}, etag), "uuid": watch}
        assert ws.next(search) == {"status": 200, "child": obj,
                                   "response": ok({"v": 1}, etag), "uuid": search}

        etag = patch(a, app, obj, {"w": 2})
        assert ws.next(watch)["response"] == ok({"v": 1, "w": 2}, etag)
        assert ws.next(search)["response"] == ok({"v": 1, "w": 2}, etag)

        delete(a, app, obj)
        assert ws.next(watch) == {"status": 200, "response": {"status": 404}, "uuid": watch}
        assert ws.next(search) == {"status": 200, "child": obj, "response": {"status": 404},
                                   "uuid": search}


def test_a_search_opened_on_b_after_a_write_through_a_shows_it(pair: Replicas) -> None:
    """B remembers an app's entries for its searches: a write through A still reaches a
    search opened on B afterwards, in its initial state or as the next update."""
    a = pair.admin(0)
    app, obj = app_and_object(pair)
    with RawNotify.login(pair.admin(1)) as ws:
        assert ws.next(ws.search(app_parent(app)))["children"] == {}  # B reads, remembers
        etag = put(a, app, obj, {"v": 1})
        search = ws.search(app_parent(app))
        first = ws.next(search)
        seen = first["children"].get(obj) or ws.next(search)["response"]
        assert seen == ok({"v": 1}, etag), first


def test_deleting_the_object_through_a_reaches_bs_watch(pair: Replicas) -> None:
    a = pair.admin(0)
    app, obj = app_and_object(pair)
    etag = put(a, app, obj, {"doomed": True})
    with RawNotify.login(pair.admin(1)) as ws:
        watch = ws.watch(entry_url(app, obj))
        assert ws.next(watch)["response"] == ok({"doomed": True}, etag)
        assert a.delete(f"/v2/object/{obj}").status_code in (200, 204)
        assert ws.next(watch) == {"status": 200, "response": {"status": 404}, "uuid": watch}


def test_class_members_watched_on_b_follow_membership_through_a(pair: Replicas) -> None:
    a = pair.admin(0)
    klass, obj = make_class(a), make_object(a, uuids.Class.Device)
    known_to(pair.admin(1), klass, obj)
    with RawNotify.login(pair.admin(1)) as ws:
        sub = ws.watch(f"v2/class/{klass}/member/")
        assert ws.next(sub)["response"] == {"status": 200, "body": []}
        assert a.put(f"/v2/class/{klass}/direct/member/{obj}").status_code == 204
        assert ws.next(sub)["response"] == {"status": 200, "body": [obj]}
        assert a.delete(f"/v2/class/{klass}/direct/member/{obj}").status_code == 204
        assert ws.next(sub)["response"] == {"status": 200, "body": []}


def test_a_burst_through_a_reaches_b_in_order_ending_with_the_delete(pair: Replicas) -> None:
    a, last = pair.admin(0), 40
    app, obj = app_and_object(pair)
    with RawNotify.login(pair.admin(1)) as ws:
        watch, search = ws.watch(entry_url(app, obj)), ws.search(app_parent(app))
        ws.next(watch), ws.next(search)
        for n in range(1, last + 1):
            put(a, app, obj, {"n": n})
        for sub in (watch, search):
            assert_never_back(counts_until(ws, sub, last))
        delete(a, app, obj)
        assert ws.next(watch)["response"] == {"status": 404}
        assert ws.next(search)["response"] == {"status": 404}
        ws.assert_quiet()


def test_writes_alternating_between_replicas_never_go_back_on_either(pair: Replicas) -> None:
    """Each replica publishes its own writes at once and the other's when it reads them:
    the two paths must not reorder an entry's values."""
    apis, last = [pair.admin(0), pair.admin(1)], 60
    app, obj = app_and_object(pair)
    with RawNotify.login(apis[0]) as on_a, RawNotify.login(apis[1]) as on_b:
        subs = [(on_a, on_a.watch(entry_url(app, obj))), (on_b, on_b.watch(entry_url(app, obj)))]
        for ws, sub in subs:
            ws.next(sub)
        for n in range(1, last + 1):
            put(apis[n % 2], app, obj, {"n": n})
        for ws, sub in subs:
            assert_never_back(counts_until(ws, sub, last))


def first_counts(ws: RawNotify, sub: str, how_many: int) -> list[int]:
    """The ``n`` of the first updates of ``sub`` (its initial state first), WATCH or SEARCH."""
    seen = []
    for _ in range(how_many):
        msg = ws.next(sub)
        entry = next(iter(msg["children"].values())) if "children" in msg else msg["response"]
        seen.append(entry["body"]["n"])
    return seen


def test_subscribing_on_b_during_a_stream_through_a_never_shows_an_older_value(
        pair: Replicas) -> None:
    """Subscriptions opened on B while A keeps writing one entry: after a subscription's
    initial state, no update carries an older value."""
    a = pair.admin(0)
    app, obj = app_and_object(pair)
    put(a, app, obj, {"n": 0})
    stop = threading.Event()

    def writer() -> None:
        api, n = Api(a.base, a.auth), 0
        while not stop.is_set():
            n += 1
            put(api, app, obj, {"n": n})

    thread = threading.Thread(target=writer)
    thread.start()
    went_back: list[list[int]] = []
    try:
        with RawNotify.login(pair.admin(1)) as ws:
            for _ in range(15):
                subs = [ws.watch(entry_url(app, obj)) if i % 2 else ws.search(app_parent(app))
                        for i in range(10)]
                for sub in subs:
                    seen = first_counts(ws, sub, 3)
                    if seen != sorted(seen):
                        went_back.append(seen)
                    ws.close_sub(sub)
    finally:
        stop.set()
        thread.join()
    assert not went_back, (f"{len(went_back)} subscriptions got an update older than their "
                           f"initial state, e.g. {went_back[:5]}")


def test_a_subscription_seen_on_a_resumes_on_b(pair: Replicas) -> None:
    """The resume tokens are the database's etags: what a client saw on one replica is
    answered unchanged on the other, and a change through A since answers in full on B."""
    app, obj = app_and_object(pair)
    put(pair.admin(0), app, obj, {"v": 1})
    with RawNotify.login(pair.admin(0)) as ws:
        full = ws.next(ws.search(app_parent(app)))
    token = selection_digest({k: v["headers"]["etag"] for k, v in full["children"].items()})
    with RawNotify.login(pair.admin(1)) as ws:
        ws.send({"uuid": "resumed", "method": "SEARCH", "parent": app_parent(app),
                 "resume": token})
        assert ws.next("resumed")["response"] == {"status": 304}
        etag = put(pair.admin(0), app, obj, {"v": 2})
        assert ws.next("resumed")["response"] == ok({"v": 2}, etag)
        ws.send({"uuid": "again", "method": "SEARCH", "parent": app_parent(app),
                 "resume": token})
        assert ws.next("again")["children"] == {obj: ok({"v": 2}, etag)}
