"""``POST /v2/batch`` of ``GET`` operations only: served from one read snapshot, without a
write transaction. While another connection holds SQLite's write lock with an uncommitted
change, such a batch still answers, with what is committed; a failing read still ends the
batch; routes a batch refuses are still refused."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.conftest import make_object

ANSWER_WITHIN_S = 20
"""A request timeout, only so that a batch stuck behind the write lock fails the test
(SQLite's busy timeout is 30 s) instead of hanging it."""


def _entry(app: str, obj: str) -> str:
    return f"/v2/app/{app}/object/{obj}"


def _reads(app: str, objs: list[str]) -> list[dict[str, Any]]:
    return [{"method": "GET", "path": _entry(app, o)} for o in objs]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConfigStoreProcess]:
    """A Config Store of its own on SQLite (the test takes its database's write lock)."""
    server = ConfigStoreProcess(tmp_path_factory.mktemp("cs-reads") / "data").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def admin(store: ConfigStoreProcess) -> Api:
    return Api(store.url, ("admin", ADMIN_PASSWORD))


@pytest.fixture
def written(admin: Api) -> tuple[str, list[str], list[str]]:
    """An app, two objects and their committed entries' etags."""
    app = make_object(admin, uuids.Class.App)
    objs = [make_object(admin, uuids.Class.Device) for _ in range(2)]
    etags = []
    for n, obj in enumerate(objs):
        assert admin.put(_entry(app, obj), json={"n": n}).status_code == 201
        etags.append(admin.get(_entry(app, obj)).headers["ETag"])
    return app, objs, etags


def test_a_batch_of_reads_answers_committed_data_while_a_write_holds_the_database(
        store: ConfigStoreProcess, admin: Api,
        written: tuple[str, list[str], list[str]]) -> None:
    app, objs, etags = written
    other = sqlite3.connect(store.data_dir / "config-store.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # the write lock: no write can begin meanwhile
        other.execute("UPDATE config SET json = '{\"n\": 99}' WHERE app = ? AND object = ?",
                      (app, objs[0]))
        resp = admin.post("/v2/batch", json={"operations": _reads(app, objs)},
                          timeout=ANSWER_WITHIN_S)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert resp.status_code == 200, resp.text
    assert resp.json()["results"] == [
        {"status": 200, "etag": etags[n], "body": {"n": n}} for n in range(2)]
    assert admin.get(_entry(app, objs[0])).json() == {"n": 0}


def test_a_batch_of_reads_sees_the_writes_committed_before_it(
        admin: Api, written: tuple[str, list[str], list[str]]) -> None:
    app, objs, _ = written
    assert admin.put(_entry(app, objs[1]), json={"n": "new"}).status_code == 204
    resp = admin.post("/v2/batch", json={"operations": _reads(app, objs)})
    assert [r["body"] for r in resp.json()["results"]] == [{"n": 0}, {"n": "new"}]


def test_a_failing_read_ends_the_batch_and_later_reads_are_not_run(
        admin: Api, written: tuple[str, list[str], list[str]]) -> None:
    app, objs, _ = written
    absent = make_object(admin, uuids.Class.Device)
    ops = [*_reads(app, objs[:1]), *_reads(app, [absent]), *_reads(app, objs[1:])]
    resp = admin.post("/v2/batch", json={"operations": ops})
    assert resp.status_code == 404
    body = resp.json()
    assert body["failed"] == 1
    assert [r["status"] for r in body["results"]] == [200, 404]
    ops[1]["accept"] = [404]
    resp = admin.post("/v2/batch", json={"operations": ops})
    assert [r["status"] for r in resp.json()["results"]] == [200, 404, 200]


@pytest.mark.parametrize("path", ["/v2/batch", "/notify/v2", "/v2/audit"])
def test_reads_of_routes_a_batch_cannot_run_are_refused(admin: Api, path: str) -> None:
    resp = admin.post("/v2/batch", json={"operations": [
        {"method": "GET", "path": "/v2/class"}, {"method": "GET", "path": path}]})
    assert resp.status_code == 400
    assert "operations[1]" in resp.json()["error"]
