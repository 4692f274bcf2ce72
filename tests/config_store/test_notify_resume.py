"""notify/v2 resume against a real Config Store restarted under its clients: a subscription
sent again with what it last saw (``resume``) is answered ``304`` with no body when that is
still current, in full when it is not, and nothing changed while the client was away is
missed; a client offering nothing gets the whole answer as always."""

from __future__ import annotations

import signal
import time
import uuid as uuidlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient, NotifyClient
from fplus.serving.notify.wire import selection_digest
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.conftest import grant, make_object, make_user

from .notify_helpers import QUIET, RawNotify, Recorder, app_parent, entry_url
from .test_notify import put

READ_APP = uuids.ConfigDBPerm.ReadApp


def _watch(ws: RawNotify, url: str, resume: Any = None) -> str:
    sub = str(uuidlib.uuid4())
    ws.send({"uuid": sub, "method": "WATCH", "request": {"url": url},
             **({"resume": resume} if resume is not None else {})})
    return sub


def _search(ws: RawNotify, parent: str, flt: Any = None, resume: Any = None) -> str:
    sub = str(uuidlib.uuid4())
    ws.send({"uuid": sub, "method": "SEARCH", "parent": parent,
             **({"filter": flt} if flt is not None else {}),
             **({"resume": resume} if resume is not None else {})})
    return sub


def _digest(update: dict[str, Any]) -> str:
    """The resume token of a SEARCH's full answer, as a client computes it."""
    return selection_digest({k: v["headers"]["etag"] for k, v in update["children"].items()})


def _restart(store: ConfigStoreProcess) -> Api:
    store.stop(signal.SIGKILL)
    store.start()
    return Api(store.url, ("admin", ADMIN_PASSWORD))


def _wait(pred: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def admin(fresh_store: ConfigStoreProcess) -> Iterator[Api]:
    api = Api(fresh_store.url, ("admin", ADMIN_PASSWORD))
    yield api
    api.close()
    fresh_store.stop(signal.SIGKILL)  # nothing to save


def test_after_a_restart_unchanged_subscriptions_answer_304_and_changed_ones_in_full(
        fresh_store: ConfigStoreProcess, admin: Api) -> None:
    app, quiet_app = make_object(admin, uuids.Class.App), make_object(admin, uuids.Class.App)
    a, b, c = (make_object(admin, uuids.Class.Device) for _ in range(3))
    put(admin, app, a, {"v": 1})
    put(admin, app, b, {"v": 1})
    put(admin, quiet_app, c, {"v": 1})
    with RawNotify.login(admin) as ws:
        subs = {"search": _search(ws, app_parent(app)),
                "quiet": _search(ws, app_parent(quiet_app)),
                "filtered": _search(ws, app_parent(app), {"v": 1}),
                "watch_a": _watch(ws, entry_url(app, a)),
                "watch_b": _watch(ws, entry_url(app, b))}
        first = {name: ws.next(sub) for name, sub in subs.items()}
    tokens = {name: _digest(u) if "children" in u else u["response"]["headers"]["etag"]
              for name, u in first.items()}
    assert len(first["filtered"]["children"]) == 2

    admin = _restart(fresh_store)
    b_etag = put(admin, app, b, {"v": 2})  # while the client is away
    with RawNotify.login(admin) as ws:
        again = {
            "search": ws.next(_search(ws, app_parent(app), resume=tokens["search"])),
            "quiet": ws.next(_search(ws, app_parent(quiet_app), resume=tokens["quiet"])),
            "filtered": ws.next(_search(ws, app_parent(app), {"v": 1},
                                        resume=tokens["filtered"])),
            "watch_a": ws.next(_watch(ws, entry_url(app, a), tokens["watch_a"])),
            "watch_b": ws.next(_watch(ws, entry_url(app, b), tokens["watch_b"]))}
        unchanged = [u for u in again.values() if u["response"]["status"] == 304]

        assert again["quiet"]["response"] == {"status": 304}
        assert "children" not in again["quiet"]
        assert again["watch_a"]["response"] == {"status": 304, "headers": {
            "etag": first["watch_a"]["response"]["headers"]["etag"]}}
        assert again["search"]["children"][b]["body"] == {"v": 2}
        assert set(again["search"]["children"]) == {a, b}
        assert set(again["filtered"]["children"]) == {a}
        assert again["watch_b"]["response"]["body"] == {"v": 2}
        assert again["watch_b"]["response"]["headers"]["etag"].strip('"') == b_etag
        assert len(unchanged) == 2 and all(u["status"] == 201 for u in unchanged)

        # a resumed subscription follows later changes as a fresh one does
        put(admin, quiet_app, c, {"v": 3})
        put(admin, app, a, {"v": 3})
        assert ws.next(again["quiet"]["uuid"])["child"] == c
        assert ws.next(again["watch_a"]["uuid"])["response"]["body"] == {"v": 3}


def test_a_principal_reading_only_its_own_entry_resumes_its_view(
        fresh_store: ConfigStoreProcess, admin: Api) -> None:
    app = make_object(admin, uuids.Class.App)
    mine, other = make_object(admin, uuids.Class.Device), make_object(admin, uuids.Class.Device)
    put(admin, app, mine, {"v": 1})
    put(admin, app, other, {"v": 1})
    who, user = make_user(admin)
    grant(admin, who, READ_APP, app, obj=mine)
    with RawNotify.login(user) as ws:
        full = ws.next(_search(ws, app_parent(app)))
    assert set(full["children"]) == {mine}

    admin = _restart(fresh_store)
    put(admin, app, other, {"v": 2})  # not the user's to see: its view is unchanged
    user = Api(fresh_store.url, user.auth)
    with RawNotify.login(user) as ws:
        assert ws.next(_search(ws, app_parent(app), resume=_digest(full)))["response"] == {
            "status": 304}
    user.close()


def test_a_stale_or_foreign_token_gets_the_whole_answer_and_a_bad_one_400(
        fresh_store: ConfigStoreProcess, admin: Api) -> None:
    app, obj = make_object(admin, uuids.Class.App), make_object(admin, uuids.Class.Device)
    put(admin, app, obj, {"v": 1})
    with RawNotify.login(admin) as ws:
        stale = ws.next(_search(ws, app_parent(app), resume="0" * 32))
        assert stale["status"] == 201 and stale["children"][obj]["body"] == {"v": 1}
        watch = ws.next(_watch(ws, entry_url(app, obj), '"not-its-etag"'))
        assert watch["response"]["body"] == {"v": 1}
        for bad in (7, ["x"], "x" * 201):
            answer = ws.next(_search(ws, app_parent(app), resume=bad))
            assert answer["status"] == 400 and "children" not in answer
            assert answer["error"] == "resume must be a string of at most 200 characters"
        ws.assert_quiet(timeout=QUIET)


def test_the_client_library_resumes_and_misses_no_change_made_while_it_was_away(
        fresh_store: ConfigStoreProcess, admin: Api) -> None:
    app, quiet_app = make_object(admin, uuids.Class.App), make_object(admin, uuids.Class.App)
    a, b = make_object(admin, uuids.Class.Device), make_object(admin, uuids.Class.Device)
    put(admin, app, a, {"v": 1})
    put(admin, quiet_app, b, {"v": 1})
    client = ConfigStoreClient(fresh_store.url, "admin", ADMIN_PASSWORD, retries=2,
                               backoff=0.05)
    recorders = {name: Recorder() for name in ("search", "quiet", "watch", "quiet_watch")}
    with client, NotifyClient(client, reconnect_delay=(0.5, 1.0)) as nc:
        subs = [nc.search(app, recorders["search"]), nc.search(quiet_app, recorders["quiet"]),
                nc.watch(app, a, recorders["watch"]),
                nc.watch(quiet_app, b, recorders["quiet_watch"])]
        recorders["search"].wait_value({a: {"v": 1}})
        recorders["quiet"].wait_value({b: {"v": 1}})
        recorders["watch"].wait_value({"v": 1})
        recorders["quiet_watch"].wait_value({"v": 1})

        fresh_store.stop(signal.SIGKILL)
        _wait(lambda: not nc.connected, "the client to notice the server is gone")
        fresh_store.start()
        admin = Api(fresh_store.url, ("admin", ADMIN_PASSWORD))
        put(admin, app, a, {"v": 2})  # before or after the client is back: it must arrive
        recorders["search"].wait_value({a: {"v": 2}}, timeout=30)
        recorders["watch"].wait_value({"v": 2}, timeout=30)
        _wait(lambda: all(sub.live for sub in subs), "every subscription answered again")
        time.sleep(QUIET)
        assert recorders["quiet"].values.empty() and recorders["quiet_watch"].values.empty()
        assert nc.resumed >= 2
    fresh_store.stop(signal.SIGKILL)


def test_a_client_offering_nothing_gets_the_whole_answer_again(
        fresh_store: ConfigStoreProcess, admin: Api) -> None:
    app, obj = make_object(admin, uuids.Class.App), make_object(admin, uuids.Class.Device)
    put(admin, app, obj, {"v": 1})
    client = ConfigStoreClient(fresh_store.url, "admin", ADMIN_PASSWORD, retries=2,
                               backoff=0.05)
    seen = Recorder()
    with client, NotifyClient(client, reconnect_delay=(0.2, 0.4), resume=False) as nc:
        nc.search(app, seen)
        seen.wait_value({obj: {"v": 1}})
        fresh_store.stop(signal.SIGKILL)
        _wait(lambda: not nc.connected, "the client to notice the server is gone")
        fresh_store.start()
        seen.wait_value({obj: {"v": 1}}, timeout=30)  # the whole answer, delivered again
        assert nc.resumed == 0
    fresh_store.stop(signal.SIGKILL)
