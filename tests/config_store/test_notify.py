"""notify/v2 against a real Config Store: the wire protocol and the client library."""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
import uuid as uuidlib
from collections.abc import Iterator
from typing import Any

import pytest

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient, NotifyClient
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.conftest import grant, make_class, make_object, make_user

from .notify_helpers import (
    RECV_TIMEOUT,
    RawNotify,
    Recorder,
    app_parent,
    entry_url,
    get_token,
    handshake,
    open_socket,
)

READ_APP = uuids.ConfigDBPerm.ReadApp


# -- HTTP helpers ---------------------------------------------------------------------


def _etag(header: str | None) -> str:
    assert header, "no ETag header"
    return header.strip('"')


def put(api: Api, app: str, obj: str, value: Any) -> str:
    """PUT an entry (any JSON value, ``None`` included); returns its new etag."""
    r = api.put(f"/v2/app/{app}/object/{obj}", data=json.dumps(value),
                headers={"Content-Type": "application/json"})
    assert r.status_code in (201, 204), r.text
    return _etag(r.headers.get("ETag"))


def patch(api: Api, app: str, obj: str, doc: dict[str, Any]) -> str:
    """Merge-PATCH an entry; returns its new etag."""
    r = api.patch(f"/v2/app/{app}/object/{obj}", data=json.dumps(doc),
                  headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code in (201, 204), r.text
    return _etag(r.headers.get("ETag"))


def delete(api: Api, app: str, obj: str) -> None:
    r = api.delete(f"/v2/app/{app}/object/{obj}")
    assert r.status_code == 204, r.text


def http_etag(api: Api, app: str, obj: str) -> str:
    r = api.get(f"/v2/app/{app}/object/{obj}")
    assert r.status_code == 200, r.text
    return _etag(r.headers.get("ETag"))


def device(api: Api) -> str:
    return make_object(api, uuids.Class.Device)


def ok(body: Any, etag: str) -> dict[str, Any]:
    """An entry response as the server sends it (etag included, our fix)."""
    return {"status": 200, "body": body, "headers": {"etag": etag}}


def admin_client(url: str) -> ConfigStoreClient:
    return ConfigStoreClient(url, "admin", ADMIN_PASSWORD, retries=2, backoff=0.05)


# -- fixtures -------------------------------------------------------------------------


@pytest.fixture
def ws(admin: Api) -> Iterator[RawNotify]:
    """A raw notify/v2 session authenticated as the root principal."""
    with RawNotify.login(admin) as session:
        yield session


@pytest.fixture
def cs(config_store: ConfigStoreProcess) -> Iterator[ConfigStoreClient]:
    with admin_client(config_store.url) as client:
        yield client


@pytest.fixture
def notify(cs: ConfigStoreClient) -> Iterator[NotifyClient]:
    with NotifyClient(cs, reconnect_delay=(0.2, 0.4)) as client:
        yield client


# -- 1. handshake ---------------------------------------------------------------------


def test_handshake_with_a_valid_token_answers_200(admin: Api) -> None:
    sock, answer = handshake(admin.base, f"Bearer {get_token(admin)}")
    sock.close()
    assert answer == "200"


def test_handshake_with_an_unknown_token_answers_401(admin: Api) -> None:
    sock, answer = handshake(admin.base, "Bearer AAAAnotAtokenAAAA")
    sock.close()
    assert answer == "401"


@pytest.mark.parametrize("first", ["hello", "Bearer ", "Bearer a.b.c", "bearer", '{"uuid":"x"}'])
def test_handshake_with_a_garbage_first_message_answers_400(admin: Api, first: str) -> None:
    sock, answer = handshake(admin.base, first)
    sock.close()
    assert answer == "400"


def test_handshake_with_a_binary_first_message_answers_400(admin: Api) -> None:
    sock = open_socket(admin.base)
    sock.send_binary(f"Bearer {get_token(admin)}".encode())
    answer = sock.recv()
    sock.close()
    assert answer == "400"


# -- 2. WATCH one entry ---------------------------------------------------------------


def test_watch_entry_initial_update_carries_body_and_etag(
        ws: RawNotify, admin: Api, new_app: str, new_obj: str) -> None:
    value = {"name": "x", "list": [1, 2]}
    etag = put(admin, new_app, new_obj, value)
    sub = ws.watch(entry_url(new_app, new_obj))
    assert ws.next(sub) == {"status": 201, "response": ok(value, etag), "uuid": sub}


def test_watch_absent_entry_initial_update_is_404(
        ws: RawNotify, new_app: str, new_obj: str) -> None:
    sub = ws.watch(entry_url(new_app, new_obj))
    assert ws.next(sub) == {"status": 201, "response": {"status": 404}, "uuid": sub}


def test_watch_entry_follows_put_patch_and_delete(
        ws: RawNotify, admin: Api, new_app: str, new_obj: str) -> None:
    sub = ws.watch(entry_url(new_app, new_obj))
    assert ws.next(sub)["response"] == {"status": 404}

    etag1 = put(admin, new_app, new_obj, {"a": 1})
    update = ws.next(sub)
    assert update == {"status": 200, "response": ok({"a": 1}, etag1), "uuid": sub}
    assert etag1 == http_etag(admin, new_app, new_obj)

    etag2 = patch(admin, new_app, new_obj, {"b": 2})
    update = ws.next(sub)
    assert update == {"status": 200, "response": ok({"a": 1, "b": 2}, etag2), "uuid": sub}
    assert etag2 != etag1
    assert etag2 == http_etag(admin, new_app, new_obj)

    delete(admin, new_app, new_obj)
    assert ws.next(sub) == {"status": 200, "response": {"status": 404}, "uuid": sub}


def test_watch_entry_identical_put_emits_nothing(
        ws: RawNotify, admin: Api, new_app: str, new_obj: str) -> None:
    etag = put(admin, new_app, new_obj, {"same": True})
    sub = ws.watch(entry_url(new_app, new_obj))
    assert ws.next(sub)["status"] == 201

    assert put(admin, new_app, new_obj, {"same": True}) == etag  # unchanged keeps its etag
    ws.assert_quiet(sub)
    # A real change afterwards is the very next update: nothing was queued in between.
    etag2 = put(admin, new_app, new_obj, {"same": False})
    assert ws.next(sub)["response"] == ok({"same": False}, etag2)


@pytest.mark.parametrize("falsy", [0, False, "", None, [], {}])
def test_watch_entry_reports_falsy_values_as_values(
        ws: RawNotify, admin: Api, new_app: str, new_obj: str, falsy: Any) -> None:
    etag = put(admin, new_app, new_obj, falsy)
    sub = ws.watch(entry_url(new_app, new_obj))
    assert ws.next(sub)["response"] == ok(falsy, etag)

    put(admin, new_app, new_obj, {"x": 1})
    assert ws.next(sub)["response"]["body"] == {"x": 1}
    etag2 = put(admin, new_app, new_obj, falsy)
    assert ws.next(sub) == {"status": 200, "response": ok(falsy, etag2), "uuid": sub}


def test_watch_entry_with_head_omits_the_body(
        ws: RawNotify, admin: Api, new_app: str, new_obj: str) -> None:
    etag = put(admin, new_app, new_obj, {"secret": "s"})
    sub = ws.watch(entry_url(new_app, new_obj), method="HEAD")
    assert ws.next(sub)["response"] == {"status": 200, "headers": {"etag": etag}}


def test_watch_entry_of_an_unknown_app_is_404_and_stays_open(
        ws: RawNotify, new_obj: str) -> None:
    sub = ws.watch(entry_url(str(uuidlib.uuid4()), new_obj))
    assert ws.next(sub) == {"status": 201, "response": {"status": 404}, "uuid": sub}


def test_watch_entry_ignores_other_entries(
        ws: RawNotify, admin: Api, new_app: str, new_obj: str) -> None:
    other = device(admin)
    sub = ws.watch(entry_url(new_app, new_obj))
    ws.next(sub)
    put(admin, new_app, other, {"other": 1})
    ws.assert_quiet(sub)
    etag = put(admin, new_app, new_obj, {"mine": 1})
    assert ws.next(sub)["response"] == ok({"mine": 1}, etag)


def test_watch_entry_reports_404_when_its_object_is_deleted(
        ws: RawNotify, admin: Api, new_app: str) -> None:
    obj = device(admin)
    etag = put(admin, new_app, obj, {"doomed": True})
    sub = ws.watch(entry_url(new_app, obj))
    assert ws.next(sub)["response"] == ok({"doomed": True}, etag)
    r = admin.delete(f"/v2/object/{obj}")
    assert r.status_code in (200, 204), r.text
    assert ws.next(sub) == {"status": 200, "response": {"status": 404}, "uuid": sub}


@pytest.mark.parametrize("variant", ["upper", "trailing-slash", "v1", "query"])
def test_watch_entry_url_variants(
        ws: RawNotify, admin: Api, new_app: str, new_obj: str, variant: str) -> None:
    url = entry_url(new_app, new_obj)
    url = {"upper": url.replace(new_app, new_app.upper()).replace(new_obj, new_obj.upper()),
           "trailing-slash": url + "/",
           "v1": "v1" + url[2:],
           "query": url + "?x=1"}[variant]
    sub = ws.watch(url)
    assert ws.next(sub) == {"status": 201, "response": {"status": 404}, "uuid": sub}
    etag = put(admin, new_app, new_obj, {"variant": variant})
    assert ws.next(sub)["response"] == ok({"variant": variant}, etag)


# -- 3. WATCH lists -------------------------------------------------------------------


def test_watch_app_object_list_follows_adds_and_removes(
        ws: RawNotify, admin: Api, new_app: str) -> None:
    a, b = device(admin), device(admin)
    sub = ws.watch(app_parent(new_app))
    assert ws.next(sub) == {"status": 201, "response": {"status": 200, "body": []}, "uuid": sub}

    put(admin, new_app, a, {"n": 1})
    update = ws.next(sub)
    assert update["status"] == 200
    assert update["response"] == {"status": 200, "body": [a]}

    put(admin, new_app, b, {"n": 2})
    assert sorted(ws.next(sub)["response"]["body"]) == sorted([a, b])

    # Changing an existing entry leaves the list as it was: suppressed as identical.
    put(admin, new_app, b, {"n": 3})
    delete(admin, new_app, a)
    assert ws.next(sub)["response"] == {"status": 200, "body": [b]}


def test_watch_app_object_list_of_an_unknown_app_is_404(ws: RawNotify) -> None:
    sub = ws.watch(app_parent(str(uuidlib.uuid4())))
    assert ws.next(sub) == {"status": 201, "response": {"status": 404}, "uuid": sub}


def test_watch_class_members_follows_membership_changes(
        ws: RawNotify, admin: Api, new_obj: str) -> None:
    klass = make_class(admin)
    sub = ws.watch(f"v2/class/{klass}/member/")
    assert ws.next(sub) == {"status": 201, "response": {"status": 200, "body": []}, "uuid": sub}

    r = admin.put(f"/v2/class/{klass}/direct/member/{new_obj}")
    assert r.status_code == 204, r.text
    assert ws.next(sub) == {"status": 200, "response": {"status": 200, "body": [new_obj]},
                           "uuid": sub}

    r = admin.delete(f"/v2/class/{klass}/direct/member/{new_obj}")
    assert r.status_code == 204, r.text
    assert ws.next(sub)["response"] == {"status": 200, "body": []}


def test_watch_class_members_sees_created_and_transitive_members(
        ws: RawNotify, admin: Api) -> None:
    klass, sub_klass = make_class(admin), make_class(admin)
    sub = ws.watch(f"v2/class/{klass}/member")
    assert ws.next(sub)["response"] == {"status": 200, "body": []}

    direct = make_object(admin, klass)
    assert ws.next(sub)["response"] == {"status": 200, "body": [direct]}

    r = admin.put(f"/v2/class/{klass}/direct/subclass/{sub_klass}")
    assert r.status_code == 204, r.text
    indirect = make_object(admin, sub_klass)
    update = ws.next(sub)
    assert sorted(update["response"]["body"]) == sorted([direct, indirect]), update

    r = admin.delete(f"/v2/object/{direct}")
    assert r.status_code in (200, 204), r.text
    assert ws.next(sub)["response"] == {"status": 200, "body": [indirect]}


# -- 4. SEARCH without a filter -------------------------------------------------------


def test_search_without_filter(ws: RawNotify, admin: Api, new_app: str) -> None:
    a, b, c = device(admin), device(admin), device(admin)
    etag_a = put(admin, new_app, a, {"n": "a"})
    etag_b = put(admin, new_app, b, 0)
    sub = ws.search(app_parent(new_app))
    assert ws.next(sub) == {
        "status": 201,
        "response": {"status": 204},
        "children": {a: ok({"n": "a"}, etag_a), b: ok(0, etag_b)},
        "uuid": sub,
    }

    etag_c = put(admin, new_app, c, {"n": "c"})
    assert ws.next(sub) == {"status": 200, "child": c, "response": ok({"n": "c"}, etag_c),
                           "uuid": sub}

    etag_a2 = patch(admin, new_app, a, {"m": 1})
    assert ws.next(sub) == {"status": 200, "child": a,
                           "response": ok({"n": "a", "m": 1}, etag_a2), "uuid": sub}

    delete(admin, new_app, b)
    assert ws.next(sub) == {"status": 200, "child": b, "response": {"status": 404}, "uuid": sub}


def test_each_new_search_starts_from_the_entries_as_they_are(
        ws: RawNotify, admin: Api, new_app: str) -> None:
    """Searches of one app share what was read for the first until the app changes."""
    a, b = device(admin), device(admin)
    etag_a = put(admin, new_app, a, {"n": 1})
    first = ws.search(app_parent(new_app))
    assert ws.next(first)["children"] == {a: ok({"n": 1}, etag_a)}
    again = ws.search(app_parent(new_app))
    assert ws.next(again)["children"] == {a: ok({"n": 1}, etag_a)}

    etag_b = put(admin, new_app, b, {"n": 2})
    etag_a = patch(admin, new_app, a, {"m": 3})
    after_writes = ws.search(app_parent(new_app))
    assert ws.next(after_writes)["children"] == {a: ok({"n": 1, "m": 3}, etag_a),
                                                 b: ok({"n": 2}, etag_b)}
    delete(admin, new_app, b)
    after_delete = ws.search(app_parent(new_app))
    assert ws.next(after_delete)["children"] == {a: ok({"n": 1, "m": 3}, etag_a)}


def test_search_of_an_empty_app_and_of_an_unknown_app(ws: RawNotify, new_app: str) -> None:
    sub = ws.search(app_parent(new_app))
    assert ws.next(sub) == {"status": 201, "response": {"status": 204}, "children": {},
                           "uuid": sub}
    missing = ws.search(app_parent(str(uuidlib.uuid4())))
    assert ws.next(missing) == {"status": 201, "response": {"status": 404}, "uuid": missing}


def test_search_ignores_other_apps(ws: RawNotify, admin: Api, new_app: str, new_obj: str) -> None:
    other_app = make_object(admin, uuids.Class.App)
    sub = ws.search(app_parent(new_app))
    ws.next(sub)
    put(admin, other_app, new_obj, {"elsewhere": True})
    ws.assert_quiet(sub)
    put(admin, new_app, new_obj, {"here": True})
    assert ws.next(sub)["child"] == new_obj


# -- 5. SEARCH with a filter ----------------------------------------------------------


def test_search_with_filter_selects_matching_children(
        ws: RawNotify, admin: Api, new_app: str) -> None:
    x, y = str(uuidlib.uuid4()), str(uuidlib.uuid4())
    a, b, c, d = device(admin), device(admin), device(admin), device(admin)
    etag_a = put(admin, new_app, a, {"cluster": x, "name": "A"})
    put(admin, new_app, b, {"cluster": y, "name": "B"})
    put(admin, new_app, c, "not an object")  # a non-object body must not break the filter
    put(admin, new_app, d, {"name": "D"})

    sub = ws.search(app_parent(new_app), {"cluster": x})
    assert ws.next(sub) == {"status": 201, "response": {"status": 204},
                           "children": {a: ok({"cluster": x, "name": "A"}, etag_a)},
                           "uuid": sub}

    # Unselected children are silent; the next update is the selected child's change.
    put(admin, new_app, b, {"cluster": y, "name": "B2"})
    put(admin, new_app, c, ["still", "not", "an", "object"])
    etag_a2 = patch(admin, new_app, a, {"name": "A2"})
    assert ws.next(sub) == {"status": 200, "child": a,
                           "response": ok({"cluster": x, "name": "A2"}, etag_a2), "uuid": sub}

    # A selected child that stops matching → 412.
    put(admin, new_app, a, {"cluster": y, "name": "A3"})
    assert ws.next(sub) == {"status": 200, "child": a, "response": {"status": 412}, "uuid": sub}
    # ...and from then on it is unselected, hence silent.
    put(admin, new_app, a, {"cluster": y, "name": "A4"})
    ws.assert_quiet(sub)

    # A child that starts matching is reported; its deletion → 412.
    etag_b = patch(admin, new_app, b, {"cluster": x})
    assert ws.next(sub) == {"status": 200, "child": b,
                           "response": ok({"cluster": x, "name": "B2"}, etag_b), "uuid": sub}
    delete(admin, new_app, b)
    assert ws.next(sub) == {"status": 200, "child": b, "response": {"status": 412}, "uuid": sub}

    # Deleting an unselected child is silent too.
    delete(admin, new_app, d)
    ws.assert_quiet(sub)


def test_search_with_an_array_filter_value(ws: RawNotify, admin: Api, new_app: str) -> None:
    a, b, c = device(admin), device(admin), device(admin)
    etag_a = put(admin, new_app, a, {"tags": ["x", "y"], "n": 1})
    put(admin, new_app, b, {"tags": ["x"]})
    put(admin, new_app, c, {"tags": ["y", "x"]})  # arrays compare whole, order included

    sub = ws.search(app_parent(new_app), {"tags": ["x", "y"]})
    assert ws.next(sub) == {"status": 201, "response": {"status": 204},
                           "children": {a: ok({"tags": ["x", "y"], "n": 1}, etag_a)},
                           "uuid": sub}

    etag_b = put(admin, new_app, b, {"tags": ["x", "y"]})
    update = ws.next(sub)
    assert update == {"status": 200, "child": b, "response": ok({"tags": ["x", "y"]}, etag_b),
                      "uuid": sub}
    put(admin, new_app, a, {"tags": ["x", "y", "z"]})
    assert ws.next(sub)["response"] == {"status": 412}


def test_search_with_a_null_filter_value_requires_the_key_absent(
        ws: RawNotify, admin: Api, new_app: str) -> None:
    a, b = device(admin), device(admin)
    etag_a = put(admin, new_app, a, {"name": "A"})
    put(admin, new_app, b, {"name": "B", "retired": True})
    sub = ws.search(app_parent(new_app), {"retired": None})
    assert ws.next(sub)["children"] == {a: ok({"name": "A"}, etag_a)}
    patch(admin, new_app, a, {"retired": True})
    assert ws.next(sub)["response"] == {"status": 412}


# -- 6. CLOSE ---------------------------------------------------------------------------


def test_close_answers_410_and_ends_the_subscription(
        ws: RawNotify, admin: Api, new_app: str, new_obj: str) -> None:
    closed = ws.watch(entry_url(new_app, new_obj))
    sentinel = ws.watch(entry_url(new_app, new_obj))
    assert ws.next(closed)["status"] == 201
    assert ws.next(sentinel)["status"] == 201

    ws.close_sub(closed)
    assert ws.next(closed) == {"status": 410, "uuid": closed}

    etag = put(admin, new_app, new_obj, {"after": "close"})
    assert ws.next(sentinel)["response"] == ok({"after": "close"}, etag)
    ws.assert_quiet(closed)


def test_close_of_a_search(ws: RawNotify, admin: Api, new_app: str, new_obj: str) -> None:
    sub = ws.search(app_parent(new_app))
    ws.next(sub)
    ws.close_sub(sub)
    assert ws.next(sub) == {"status": 410, "uuid": sub}
    put(admin, new_app, new_obj, {"n": 1})
    ws.assert_quiet(sub)


# -- 7. bad requests ------------------------------------------------------------------


def _bad(ws: RawNotify, request: dict[str, Any]) -> dict[str, Any]:
    sub = str(uuidlib.uuid4())
    ws.send({"uuid": sub, **request})
    return ws.next(sub) | {"uuid": "-"}


@pytest.mark.parametrize(("request_", "status"), [
    ({"method": "WATCH"}, 400),
    ({"method": "WATCH", "request": "v2/app/x/object/"}, 400),
    ({"method": "WATCH", "request": {}}, 400),
    ({"method": "WATCH", "request": {"url": "v2/app/{app}/object/", "method": "POST"}}, 400),
    ({"method": "SEARCH", "parent": "v2/app/{app}/object"}, 400),
    ({"method": "SEARCH"}, 400),
    ({"method": "FROB", "parent": "v2/app/{app}/object/"}, 400),
    ({"request": {"url": "v2/app/{app}/object/"}}, 400),
    ({"method": "WATCH", "request": {"url": "v2/no/such/thing"}}, 404),
    ({"method": "WATCH", "request": {"url": "v2/app/not-a-uuid/object/"}}, 404),
    ({"method": "SEARCH", "parent": "v2/class/{app}/member/"}, 404),
])
def test_bad_requests_get_an_error_status(
        ws: RawNotify, new_app: str, request_: dict[str, Any], status: int) -> None:
    request_ = json.loads(json.dumps(request_).replace("{app}", new_app))
    assert _bad(ws, request_) == {"status": status, "uuid": "-"}
    # The connection survives a bad request.
    sub = ws.watch(app_parent(new_app))
    assert ws.next(sub)["status"] == 201


def test_a_failed_subscription_gets_no_updates(
        ws: RawNotify, admin: Api, new_app: str, new_obj: str) -> None:
    bad = str(uuidlib.uuid4())
    ws.send({"uuid": bad, "method": "SEARCH", "parent": app_parent(new_app)[:-1]})
    assert ws.next(bad)["status"] == 400
    sentinel = ws.search(app_parent(new_app))
    ws.next(sentinel)
    put(admin, new_app, new_obj, {"n": 1})
    assert ws.next(sentinel)["child"] == new_obj
    ws.assert_quiet(bad)


@pytest.mark.parametrize("message", ["this is not json", '["uuid"]', '{"method": "WATCH"}'])
def test_a_malformed_request_closes_the_socket(ws: RawNotify, message: str) -> None:
    ws.send(message)
    assert ws.is_closed_by_server()


# -- 8. ACL ---------------------------------------------------------------------------


def test_watch_without_read_app_is_403_until_granted(
        admin: Api, new_app: str, new_obj: str) -> None:
    user, user_api = make_user(admin)
    put(admin, new_app, new_obj, {"v": 1})
    with RawNotify.login(user_api) as ws:
        sub = ws.watch(entry_url(new_app, new_obj))
        assert ws.next(sub) == {"status": 201, "response": {"status": 403}, "uuid": sub}

        # Still open, still refused: the write is reported as 403, without its body.
        put(admin, new_app, new_obj, {"v": 2})
        assert ws.next(sub) == {"status": 200, "response": {"status": 403}, "uuid": sub}

        grant_id = grant(admin, user, READ_APP, new_app)
        etag = put(admin, new_app, new_obj, {"v": 3})
        assert ws.next(sub) == {"status": 200, "response": ok({"v": 3}, etag), "uuid": sub}

        # Revoking is noticed on the next update too.
        r = admin.delete(f"/v2/grant/{grant_id}")
        assert r.status_code in (200, 204), r.text
        put(admin, new_app, new_obj, {"v": 4})
        assert ws.next(sub) == {"status": 200, "response": {"status": 403}, "uuid": sub}


def test_search_and_list_without_read_app_are_403(
        admin: Api, new_app: str, new_obj: str) -> None:
    _, user_api = make_user(admin)
    put(admin, new_app, new_obj, {"v": 1})
    with RawNotify.login(user_api) as ws:
        search = ws.search(app_parent(new_app))
        assert ws.next(search) == {"status": 201, "response": {"status": 403}, "uuid": search}
        listing = ws.watch(app_parent(new_app))
        assert ws.next(listing) == {"status": 201, "response": {"status": 403}, "uuid": listing}

        put(admin, new_app, new_obj, {"v": 2})
        assert ws.next(listing) == {"status": 200, "response": {"status": 403}, "uuid": listing}
        # The search stays in its no-access state: nothing about the child leaks.
        ws.assert_quiet(search)


def test_search_after_grant_gets_a_full_update(admin: Api, new_app: str) -> None:
    user, user_api = make_user(admin)
    a, b = device(admin), device(admin)
    etag_a = put(admin, new_app, a, {"n": "a"})
    with RawNotify.login(user_api) as ws:
        sub = ws.search(app_parent(new_app))
        assert ws.next(sub)["response"] == {"status": 403}
        grant(admin, user, READ_APP, new_app)
        etag_b = put(admin, new_app, b, {"n": "b"})
        assert ws.next(sub) == {
            "status": 200, "response": {"status": 204},
            "children": {a: ok({"n": "a"}, etag_a), b: ok({"n": "b"}, etag_b)},
            "uuid": sub,
        }


def test_search_after_revoke_gets_a_no_access_update(admin: Api, new_app: str) -> None:
    """Losing ReadApp on the app drops every child at once (a no-access update)."""
    user, user_api = make_user(admin)
    a, b = device(admin), device(admin)
    put(admin, new_app, a, {"n": "a"})
    put(admin, new_app, b, {"n": "b"})
    grant_id = grant(admin, user, READ_APP, new_app)
    with RawNotify.login(user_api) as ws:
        sub = ws.search(app_parent(new_app))
        assert set(ws.next(sub)["children"]) == {a, b}
        r = admin.delete(f"/v2/grant/{grant_id}")
        assert r.status_code in (200, 204), r.text
        put(admin, new_app, a, {"n": "a2"})
        assert ws.next(sub) == {"status": 200, "response": {"status": 403}, "uuid": sub}


def test_object_restricted_grant_shows_only_that_child(admin: Api, new_app: str) -> None:
    user, user_api = make_user(admin)
    mine, other = device(admin), device(admin)
    etag_mine = put(admin, new_app, mine, {"n": "mine"})
    put(admin, new_app, other, {"n": "other"})
    grant(admin, user, READ_APP, new_app, obj=mine)

    with RawNotify.login(user_api) as ws:
        sub = ws.search(app_parent(new_app))
        assert ws.next(sub) == {"status": 201, "response": {"status": 204},
                               "children": {mine: ok({"n": "mine"}, etag_mine)}, "uuid": sub}
        watch_mine = ws.watch(entry_url(new_app, mine))
        assert ws.next(watch_mine)["response"] == ok({"n": "mine"}, etag_mine)
        watch_other = ws.watch(entry_url(new_app, other))
        assert ws.next(watch_other)["response"] == {"status": 403}

        # A write to the other object never reveals its value.
        put(admin, new_app, other, {"n": "other2"})
        etag_mine2 = put(admin, new_app, mine, {"n": "mine2"})
        seen: list[dict[str, Any]] = []
        while (update := ws.next(sub))["child"] != mine:
            seen.append(update)
        assert update["response"] == ok({"n": "mine2"}, etag_mine2)
        assert all(u["response"]["status"] >= 400 and "body" not in u["response"]
                   for u in seen), seen
        assert ws.next(watch_other)["response"] == {"status": 403}


def test_object_restricted_grant_with_filter_keeps_other_children_silent(
        admin: Api, new_app: str) -> None:
    """Under a filter, a child the principal may not read is never selected: silent."""
    user, user_api = make_user(admin)
    mine, other = device(admin), device(admin)
    etag_mine = put(admin, new_app, mine, {"cluster": "c1", "n": 1})
    put(admin, new_app, other, {"cluster": "c1", "n": 1})
    grant(admin, user, READ_APP, new_app, obj=mine)

    with RawNotify.login(user_api) as ws:
        sub = ws.search(app_parent(new_app), {"cluster": "c1"})
        assert ws.next(sub)["children"] == {mine: ok({"cluster": "c1", "n": 1}, etag_mine)}
        put(admin, new_app, other, {"cluster": "c1", "n": 2})
        etag_mine2 = put(admin, new_app, mine, {"cluster": "c1", "n": 2})
        assert ws.next(sub) == {"status": 200, "child": mine,
                               "response": ok({"cluster": "c1", "n": 2}, etag_mine2),
                               "uuid": sub}


# -- 9. the client library --------------------------------------------------------------


def test_client_search_folds_children(
        notify: NotifyClient, cs: ConfigStoreClient, new_app: str, admin: Api) -> None:
    a, b = device(admin), device(admin)
    cs.put_config(new_app, a, {"n": "a"})
    rec = Recorder()
    sub = notify.search(new_app, rec)
    assert sub.wait_initial(RECV_TIMEOUT)
    rec.wait_value({a: {"n": "a"}})

    cs.put_config(new_app, b, 0)
    rec.wait_value({a: {"n": "a"}, b: 0})
    cs.patch_config(new_app, a, {"m": 1})
    rec.wait_value({a: {"n": "a", "m": 1}, b: 0})
    cs.delete_config(new_app, a)
    rec.wait_value({b: 0})
    cs.delete_config(new_app, b)
    rec.wait_value({})
    assert sub.status == 200 and not sub.ended


def test_client_search_delivers_each_entrys_etag(
        notify: NotifyClient, cs: ConfigStoreClient, new_app: str, admin: Api) -> None:
    """``SearchState.etags`` pairs each body with the etag of that same version."""
    a, b = device(admin), device(admin)
    cs.put_config(new_app, a, {"n": 1})
    rec = Recorder()
    notify.search(new_app, rec)
    first = rec.wait_value({a: {"n": 1}})
    assert first.etags == {a: cs.get_config_with_etag(new_app, a)[1]}
    cs.put_config(new_app, b, {"n": 2})
    cs.patch_config(new_app, a, {"n": 3})
    latest = rec.wait_value({a: {"n": 3}, b: {"n": 2}})
    assert latest.etags == {a: cs.get_config_with_etag(new_app, a)[1],
                            b: cs.get_config_with_etag(new_app, b)[1]}
    assert latest.etags[a] != first.etags[a]
    cs.delete_config(new_app, a)
    assert set(rec.wait_value({b: {"n": 2}}).etags) == {b}


def test_client_search_with_filter_drops_children_that_stop_matching(
        notify: NotifyClient, cs: ConfigStoreClient, new_app: str, admin: Api) -> None:
    a, b = device(admin), device(admin)
    cs.put_config(new_app, a, {"cluster": "c1"})
    cs.put_config(new_app, b, {"cluster": "c2"})
    rec = Recorder()
    notify.search(new_app, rec, filter={"cluster": "c1"})
    rec.wait_value({a: {"cluster": "c1"}})
    cs.put_config(new_app, b, {"cluster": "c1", "x": 1})
    rec.wait_value({a: {"cluster": "c1"}, b: {"cluster": "c1", "x": 1}})
    cs.put_config(new_app, a, {"cluster": "c2"})
    rec.wait_value({b: {"cluster": "c1", "x": 1}})


def test_client_watch_delivers_values_and_none(
        notify: NotifyClient, cs: ConfigStoreClient, new_app: str, new_obj: str) -> None:
    rec = Recorder()
    sub = notify.watch(new_app, new_obj, rec)
    assert sub.wait_initial(RECV_TIMEOUT)
    rec.wait_value(None)
    assert sub.etag is None

    etag = cs.put_config(new_app, new_obj, {"v": 1})
    rec.wait_value({"v": 1})
    assert sub.etag == etag
    cs.put_config(new_app, new_obj, 0)
    assert rec.wait_for(lambda v: v is not None) == 0
    cs.delete_config(new_app, new_obj)
    rec.wait_value(None)
    assert sub.etag is None

    sub.close()
    cs.put_config(new_app, new_obj, {"v": "after close"})
    time.sleep(0.3)
    assert rec.values.empty()


def test_client_watch_of_a_bad_url_ends_the_subscription(notify: NotifyClient) -> None:
    rec = Recorder()
    sub = notify.watch_url("v2/no/such/thing", rec)
    assert sub.wait_initial(RECV_TIMEOUT)
    assert sub.ended and sub.status == 404
    assert rec.values.empty()


# -- 10. reconnection ---------------------------------------------------------------------


def _wait(pred: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_client_resubscribes_after_a_server_restart(fresh_store: ConfigStoreProcess) -> None:
    api = Api(fresh_store.url, ("admin", ADMIN_PASSWORD))
    app = make_object(api, uuids.Class.App)
    obj = make_object(api, uuids.Class.Device)
    put(api, app, obj, {"gen": 1})
    api.close()

    with admin_client(fresh_store.url) as client, \
            NotifyClient(client, reconnect_delay=(0.2, 0.4)) as nc:
        watched, searched = Recorder(), Recorder()
        watch = nc.watch(app, obj, watched)
        search = nc.search(app, searched)
        watched.wait_value({"gen": 1})
        searched.wait_value({obj: {"gen": 1}})
        old_uuids = (watch.uuid, search.uuid)
        assert None not in old_uuids

        fresh_store.stop()
        _wait(lambda: not nc.connected, 10, "the client to notice the server is gone")
        fresh_store.start()  # a new process on the same data dir and port
        assert nc.wait_ready(10), "the client did not reconnect"

        restarted = Api(fresh_store.url, ("admin", ADMIN_PASSWORD))
        put(restarted, app, obj, {"gen": 2})
        restarted.close()
        watched.wait_value({"gen": 2}, timeout=10)
        searched.wait_value({obj: {"gen": 2}}, timeout=10)

        assert watch.uuid is not None and search.uuid is not None
        assert watch.uuid not in old_uuids and search.uuid not in old_uuids
        assert not watch.ended and not search.ended
    # Graceful shutdown would wait out gunicorn's graceful_timeout; nothing is left to save.
    fresh_store.stop(signal.SIGKILL)


def test_client_dropped_for_falling_behind_resubscribes(
        tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    """A busy callback stops the client reading; the server drops it (its queue is full)
    with a reason, and the client reconnects and resubscribes to the current value."""
    server = ConfigStoreProcess(tmp_path / "data",
                                extra_args=("--notify-queue-bytes", "100000")).start()
    try:
        api = Api(server.url, ("admin", ADMIN_PASSWORD))
        app, obj = make_object(api, uuids.Class.App), device(api)
        put(api, app, obj, {"n": 0})
        busy, seen = threading.Event(), Recorder()

        def slow(value: Any) -> None:
            seen(value)
            if value == {"n": 1}:
                busy.wait(30)  # the application is busy and reads nothing meanwhile

        caplog.set_level(logging.INFO, logger="fplus.config_store.client.notify")
        with admin_client(server.url) as client, \
                NotifyClient(client, reconnect_delay=(0.2, 0.4)) as nc:
            nc.watch(app, obj, slow)
            seen.wait_value({"n": 0})
            put(api, app, obj, {"n": 1})
            seen.wait_value({"n": 1})
            for n in range(2, 40):  # far more than the socket buffers and the queue hold
                put(api, app, obj, {"n": n, "pad": "x" * 200_000})
            busy.set()
            seen.wait_for(lambda v: isinstance(v, dict) and v.get("n") == 39, timeout=30)
        messages = [r.getMessage() for r in caplog.records]
        assert any(m.startswith("notify: server closed the connection") for m in messages)
        assert sum(m.startswith("notify: connected to") for m in messages) == 2
        api.close()
    finally:
        server.stop(signal.SIGKILL)  # nothing to save; graceful would wait for keep-alives
