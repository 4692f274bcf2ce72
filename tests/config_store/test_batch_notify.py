"""``POST /v2/batch`` and notify/v2: a committed batch gives subscribers one update per
change, in the batch's order, exactly as the operations sent one by one would; a batch
rolled back gives none. On both storage backends (``config_store``)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.config_store.batch_helpers import entry_op
from tests.conftest import make_object

from .notify_helpers import RawNotify, app_parent


@pytest.fixture
def admin(config_store: ConfigStoreProcess) -> Api:
    return Api(config_store.url, ("admin", ADMIN_PASSWORD))


@pytest.fixture
def ws(admin: Api) -> Iterator[RawNotify]:
    with RawNotify.login(admin) as session:
        yield session


def _ok(value: Any, etag: str) -> dict[str, Any]:
    return {"status": 200, "body": value, "headers": {"etag": etag}}


def test_a_committed_batch_notifies_each_change_in_order(
        ws: RawNotify, admin: Api) -> None:
    app = make_object(admin, uuids.Class.App)
    a, b, c = (make_object(admin, uuids.Class.Device) for _ in range(3))
    r = admin.put(f"/v2/app/{app}/object/{c}", json={"n": "c"})
    assert r.status_code == 201, r.text
    sub = ws.search(app_parent(app))
    assert ws.next(sub)["children"].keys() == {c}

    r = admin.post("/v2/batch", json={"operations": [
        entry_op("PUT", app, a, {"n": "a"}), entry_op("PATCH", app, a, {"m": 1}),
        entry_op("PUT", app, b, 0), entry_op("DELETE", app, c), entry_op("GET", app, a)]})
    assert r.status_code == 200, r.text
    etags = [res.get("etag", "").strip('"') for res in r.json()["results"]]

    assert ws.next(sub) == {"status": 200, "child": a, "response": _ok({"n": "a"}, etags[0]),
                           "uuid": sub}
    assert ws.next(sub) == {"status": 200, "child": a,
                           "response": _ok({"n": "a", "m": 1}, etags[1]), "uuid": sub}
    assert ws.next(sub) == {"status": 200, "child": b, "response": _ok(0, etags[2]),
                           "uuid": sub}
    assert ws.next(sub) == {"status": 200, "child": c, "response": {"status": 404},
                           "uuid": sub}
    _next_is_a_single_write(ws, sub, admin, app, b)  # nothing more came of the batch


def _next_is_a_single_write(ws: RawNotify, sub: str, admin: Api, app: str, obj: str) -> None:
    """Write ``obj`` alone: the subscriber's next update is that write's (notify keeps
    order, so an update of the batch not seen yet would come first)."""
    r = admin.put(f"/v2/app/{app}/object/{obj}", data=json.dumps({"v": "after"}),
                  headers={"Content-Type": "application/json"})
    assert r.status_code in (201, 204), r.text
    assert ws.next(sub) == {"status": 200, "child": obj,
                           "response": _ok({"v": "after"}, r.headers["ETag"].strip('"')),
                           "uuid": sub}


def test_a_rolled_back_batch_notifies_nothing(ws: RawNotify, admin: Api) -> None:
    app = make_object(admin, uuids.Class.App)
    a, b = make_object(admin, uuids.Class.Device), make_object(admin, uuids.Class.Device)
    r = admin.put(f"/v2/app/{app}/object/{b}", json={"v": "b"})
    assert r.status_code == 201, r.text
    sub = ws.search(app_parent(app))
    ws.next(sub)

    r = admin.post("/v2/batch", json={"operations": [
        entry_op("PUT", app, a, {"v": 1}), entry_op("DELETE", app, b),
        entry_op("PUT", app, b, {"v": 2}, headers={"If-None-Match": "*"}),  # b is gone: passes
        entry_op("PUT", app, a, {"v": 3}, headers={"If-Match": f'"{uuid.uuid4()}"'})]})
    assert r.status_code == 412, r.text
    assert r.json()["failed"] == 3

    assert admin.get(f"/v2/app/{app}/object/{a}").status_code == 404
    assert admin.get(f"/v2/app/{app}/object/{b}").json() == {"v": "b"}
    _next_is_a_single_write(ws, sub, admin, app, b)  # the first update: none of the batch
