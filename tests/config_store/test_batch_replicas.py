"""``POST /v2/batch`` across Config Store replicas on one PostgreSQL database: a batch
committed through one replica reaches the other's notify/v2 subscribers as one update per
change, in order (the change feed carries each change, as for single writes), and the other
replica serves its grants and entries; a rolled-back batch reaches nobody."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from fplus.config_store import uuids
from harness.postgres import ExternalPostgres, PostgresServer
from harness.servers import Api
from tests.config_store.batch_helpers import entry_op
from tests.config_store.notify_helpers import RawNotify, app_parent
from tests.config_store.replicas.pair import Replicas, eventually, known_to
from tests.conftest import make_object, make_user

pytestmark = pytest.mark.replicas


@pytest.fixture(scope="module")
def pair(postgres: PostgresServer | ExternalPostgres,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    replicas = Replicas.start(tmp_path_factory.mktemp("batch-replicas"),
                              postgres.create_database())
    yield replicas
    replicas.stop()


def _ok(value: Any, etag: str) -> dict[str, Any]:
    return {"status": 200, "body": value, "headers": {"etag": etag.strip('"')}}


def _single_write_is_next(ws: RawNotify, sub: str, a: Api, app: str, obj: str) -> None:
    """A write of ``obj`` alone through A: B's subscriber's next update is that write's."""
    r = a.put(f"/v2/app/{app}/object/{obj}", data=json.dumps({"v": "after"}),
              headers={"Content-Type": "application/json"})
    assert r.status_code in (201, 204), r.text
    assert ws.next(sub) == {"status": 200, "child": obj,
                           "response": _ok({"v": "after"}, r.headers["ETag"]), "uuid": sub}


def _log_after(database: str, seq: int) -> list[tuple[str, str, str, str | None]]:
    """The change log's rows after ``seq``: what other replicas follow."""
    with psycopg.connect(database, autocommit=True) as conn:
        return [tuple(r) for r in conn.execute(
            "SELECT kind, a, b, etag FROM change_log WHERE seq > %s ORDER BY seq", (seq,))]


def _last_seq(database: str) -> int:
    with psycopg.connect(database, autocommit=True) as conn:
        row = conn.execute("SELECT coalesce(max(seq), 0) FROM change_log").fetchone()
    return int(row[0]) if row else 0


def test_a_batch_through_a_reaches_b_change_by_change(pair: Replicas) -> None:
    a, b = pair.admin(0), pair.admin(1)
    app = make_object(a, uuids.Class.App)
    x, y, z = (make_object(a, uuids.Class.Device) for _ in range(3))
    assert a.put(f"/v2/app/{app}/object/{z}", json={"z": 1}).status_code == 201
    known_to(b, app, x, y, z)
    eventually(lambda: b.get(f"/v2/app/{app}/object/{z}").status_code == 200, "z on B")
    with RawNotify.login(b) as ws:
        sub = ws.search(app_parent(app))
        assert ws.next(sub)["children"].keys() == {z}
        before = _last_seq(pair.database)
        r = a.post("/v2/batch", json={"operations": [
            entry_op("PUT", app, x, {"n": 1}), entry_op("PATCH", app, x, {"m": 2}),
            entry_op("PUT", app, y, [1]), entry_op("DELETE", app, z)]})
        assert r.status_code == 200, r.text
        etags = [res.get("etag", "").strip('"') for res in r.json()["results"]]
        # the feed: one row per change, in the batch's order, as single writes log them
        assert _log_after(pair.database, before) == [
            ("config", app, x, etags[0]), ("config", app, x, etags[1]),
            ("config", app, y, etags[2]), ("config", app, z, None)]
        # B: each entry's changes in order up to its last (a change B reads after a later
        # one of the same entry is skipped, as for single writes: never an older value)
        expected = [
            {"status": 200, "child": x, "response": _ok({"n": 1}, etags[0]), "uuid": sub},
            {"status": 200, "child": x, "response": _ok({"n": 1, "m": 2}, etags[1]),
             "uuid": sub},
            {"status": 200, "child": y, "response": _ok([1], etags[2]), "uuid": sub},
            {"status": 200, "child": z, "response": {"status": 404}, "uuid": sub}]
        seen = [ws.next(sub)]
        while seen[-1]["child"] != z:
            seen.append(ws.next(sub))
        assert seen in (expected, expected[1:])
        _single_write_is_next(ws, sub, a, app, y)


def test_a_rolled_back_batch_through_a_reaches_nobody_on_b(pair: Replicas) -> None:
    a, b = pair.admin(0), pair.admin(1)
    app = make_object(a, uuids.Class.App)
    x, y = make_object(a, uuids.Class.Device), make_object(a, uuids.Class.Device)
    known_to(b, app, x, y)
    with RawNotify.login(b) as ws:
        sub = ws.search(app_parent(app))
        ws.next(sub)
        r = a.post("/v2/batch", json={"operations": [
            entry_op("PUT", app, x, {"n": 1}),
            entry_op("PUT", app, y, {"n": 2}, headers={"If-Match": f'"{uuid.uuid4()}"'})]})
        assert r.status_code == 412 and r.json()["failed"] == 1, r.text
        _single_write_is_next(ws, sub, a, app, y)
    assert b.get(f"/v2/app/{app}/object/{x}").status_code == 404


def test_grants_and_principals_of_a_batch_are_served_by_b(pair: Replicas) -> None:
    a, b = pair.admin(0), pair.admin(1)
    app = make_object(a, uuids.Class.App)
    principal, _ = make_user(a)
    known_to(b, app, principal)
    name = f"batched-{uuid.uuid4().hex[:8]}"
    r = a.post("/v2/batch", json={"operations": [
        {"method": "POST", "path": "/v2/grant",
         "body": {"principal": principal, "permission": uuids.ConfigDBPerm.ReadApp,
                  "target": app, "plural": False}},
        {"method": "POST", "path": "/v2/principal", "body": {"name": name}}]})
    assert r.status_code == 200, r.text
    made = r.json()["results"][1]["body"]["uuid"]
    eventually(lambda: b.get(f"/v2/acl/{principal}").json() == [
        {"permission": uuids.ConfigDBPerm.ReadApp, "target": app}], "the grant on B")

    def found() -> bool:
        r = b.get(f"/v2/identity/login/{name}")
        return r.status_code == 200 and r.json() == made

    eventually(found, "the principal on B")
