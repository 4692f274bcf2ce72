"""Concurrent writes for the replica tests: calls released at once, a stream of requests in
threads, and principal enrolments (many rows in one write) with probes telling whether
each is whole or absent."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import psycopg

from fplus.config_store import uuids
from harness.servers import Api
from tests.config_store.actors import direct_members, grants_of

from .pair import eventually

T = TypeVar("T")
GRANTS = 5


def at_once(calls: list[Callable[[], T]]) -> list[T]:
    """Run ``calls`` in threads released together; their results in order."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], T]) -> T:
        barrier.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


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
        """Stop, wait for the threads, and return the results."""
        self._stop.set()
        for t in self._threads:
            t.join()
        return self.results


def enrolment(group: str, app: str, n: int) -> dict:
    """A principal with a label, a group and :data:`GRANTS` grants: many rows, one write."""
    return {"uuid": str(uuid.uuid4()), "name": f"enrolled-{n}-{uuid.uuid4().hex[:8]}",
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


WHOLE = (1, 1, 2, 1, GRANTS)
"""The rows of an enrolled principal: its object, its credentials, two memberships (the
Principal class and the group), its Info entry and its grants."""


def check_whole_or_absent(api: Api, database: str, group: str, bodies: Mapping[Any, dict],
                          created: Collection[Any]) -> None:
    """Each enrolment of ``bodies`` is served by ``api`` and stored either whole or not at
    all, and those in ``created`` (answered 201) whole."""
    for n, body in bodies.items():
        principal = body["uuid"]
        parts, rows = seen_through(api, group, principal), rows_of(database, principal)
        if all(parts):
            assert rows == WHOLE, (principal, rows)
        else:
            assert n not in created, f"{principal} was created, but is served as {parts}"
            assert not any(parts) and rows == (0,) * len(WHOLE), (principal, parts, rows)


def enrol_stream(api: Api, group: str, app: str, threads: int = 4) -> tuple[Stream, dict]:
    """Enrolments through ``api`` in ``threads`` threads: the stream (results ``(n,
    status)``) and the bodies sent so far by n."""
    bodies: dict[int, dict] = {}

    def enrol(n: int) -> tuple[int, int]:
        bodies[n] = body = enrolment(group, app, n)
        return n, Api(api.base, api.auth).post("/v2/principal", json=body).status_code

    return Stream(enrol, threads), bodies
