"""``kill -9`` of one replica: the other keeps serving throughout, and a replica killed in
the middle of multi-row writes leaves each of them whole or absent."""

from __future__ import annotations

import signal
import threading
import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest

from config_store import uuids
from harness.servers import Api
from tests.config_store.actors import direct_members, grants_of
from tests.conftest import make_class, make_object

from .pair import Replicas, eventually, known_to

GRANTS = 5


class Stream:
    """Calls ``step(n)`` for n = 0, 1, … in ``threads`` threads until stopped; keeps every
    result (and every exception, which ends that thread)."""

    def __init__(self, step: Callable[[int], object], threads: int = 1) -> None:
        self.results: list[object] = []
        self.errors: list[BaseException] = []
        self._step, self._next = step, 0
        self._stop, self._lock = threading.Event(), threading.Lock()
        self._threads = [threading.Thread(target=self._run) for _ in range(threads)]
        for t in self._threads:
            t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                n, self._next = self._next, self._next + 1
            try:
                result = self._step(n)
            except BaseException as exc:  # the stream of a killed replica ends so
                self.errors.append(exc)
                return
            with self._lock:
                self.results.append(result)

    def wait_for(self, count: int) -> None:
        """Wait until ``count`` results are in."""
        eventually(lambda: len(self.results) >= count or self.errors, f"{count} results")

    def stop(self) -> list[object]:
        self._stop.set()
        for t in self._threads:
            t.join()
        return self.results


@pytest.fixture
def a_back(pair: Replicas) -> Iterator[Replicas]:
    """The pair; replica A is started again after the test if it was killed."""
    yield pair
    if pair.a.proc is None or pair.a.proc.poll() is not None:
        pair.stop_one(0, signal.SIGKILL)
        pair.start_one(0)


def test_b_answers_every_request_while_a_is_killed_mid_write(a_back: Replicas) -> None:
    pair = a_back
    a, b = pair.admin(0), pair.admin(1)
    app, obj = make_object(a, uuids.Class.App), make_object(a, uuids.Class.Device)
    known_to(b, app, obj)
    url = f"/v2/app/{app}/object/{obj}"

    def through_b(n: int) -> int:
        status = b.put(url, json={"n": n}).status_code
        return status if status >= 300 else b.get(url).status_code

    on_a = Stream(lambda n: a.put(url, json={"a": n}).status_code, threads=2)
    on_b = Stream(through_b)
    on_b.wait_for(20)
    pair.stop_one(0, signal.SIGKILL)
    on_b.wait_for(len(on_b.results) + 40)
    statuses = on_b.stop()
    on_a.stop()
    assert not on_b.errors and set(statuses) == {200}, (on_b.errors, sorted(set(statuses)))

    last = b.get(url).json()
    again = pair.start_one(0)
    assert Api(again.url, a.auth).get(url).json() == last


def enrolment(group: str, app: str, n: int) -> dict:
    """A principal with a label, a group and :data:`GRANTS` grants: many rows, one write."""
    return {"uuid": str(uuid.uuid4()), "name": f"killed-{n}-{uuid.uuid4().hex[:8]}",
            "label": f"principal {n}", "groups": [group],
            "grants": [{"permission": uuids.ConfigDBPerm.ReadApp, "target": app,
                        "object": str(uuid.uuid4())} for _ in range(GRANTS)]}


def seen_through(b: Api, group: str, principal: str) -> tuple[bool, ...]:
    """Which parts of an enrolled principal replica B serves."""
    info = b.get(f"/v2/app/{uuids.App.Info}/object/{principal}")
    return (b.get(f"/v2/principal/{principal}").status_code == 200,
            b.get(f"/v2/object/{principal}").status_code == 200,
            principal in direct_members(b, group),
            info.status_code == 200,
            len(grants_of(b, principal)) == GRANTS)


def rows_of(database: str, principal: str) -> tuple[int, ...]:
    """How many rows of each table name ``principal``."""
    with psycopg.connect(database) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM object WHERE uuid = %(p)s),"
            " (SELECT count(*) FROM principal WHERE uuid = %(p)s),"
            " (SELECT count(*) FROM membership WHERE member = %(p)s),"
            " (SELECT count(*) FROM config WHERE object = %(p)s),"
            " (SELECT count(*) FROM acl_grant WHERE principal = %(p)s)", {"p": principal},
        ).fetchone()
    assert row is not None
    return tuple(row)


def test_a_replica_killed_during_multi_row_writes_leaves_none_partial(
        a_back: Replicas) -> None:
    pair = a_back
    a, b = pair.admin(0), pair.admin(1)
    group, app = make_class(a), make_object(a, uuids.Class.App)
    known_to(b, group, app)
    bodies: dict[int, dict] = {}

    def enrol(n: int) -> tuple[int, int]:
        bodies[n] = body = enrolment(group, app, n)
        return n, Api(a.base, a.auth).post("/v2/principal", json=body).status_code

    stream = Stream(enrol, threads=4)
    stream.wait_for(20)
    pair.stop_one(0, signal.SIGKILL)
    answered = dict(stream.stop())  # the requests in flight at the kill got no answer
    assert set(answered.values()) == {201}, answered

    make_object(b, uuids.Class.Device)  # a write through B: B has caught up with A's log
    for n, body in bodies.items():
        parts = seen_through(b, group, body["uuid"])
        rows = rows_of(pair.database, body["uuid"])
        if all(parts):
            assert rows == (1, 1, 2, 1, GRANTS), (body["uuid"], rows)
        else:
            assert n not in answered, f"{body['uuid']} was created, B serves only {parts}"
            assert not any(parts) and rows == (0, 0, 0, 0, 0), (body["uuid"], parts, rows)
