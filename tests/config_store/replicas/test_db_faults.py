"""The database itself failing: unreachable at start (one line, exit non-zero), lost while
serving (503 with Retry-After, nothing half-written), and back on the same port (the
replicas recover without a restart, notify flows again).

These tests stop and start a PostgreSQL server of their own (never the session's)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
import requests

from fplus.config_store import uuids
from harness.postgres import PostgresServer, find_bin_dir
from harness.servers import Api, free_port
from tests.config_store.notify_helpers import RawNotify, entry_url
from tests.conftest import make_class, make_object

from .pair import Replicas, eventually, known_to, refusal
from .writes import at_once, check_whole_or_absent, enrol_stream, enrolment, rows_of

pytestmark = pytest.mark.replicas  # PostgreSQL, though not the session's fixture

RECOVERY = 60.0
"""How long replicas may take to find the database again (their pools back off)."""
CLIENT_TIMEOUT = 10.0


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL for this module alone: its tests stop it."""
    if find_bin_dir() is None:
        reason = "PostgreSQL binaries needed to stop and start a server of our own"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    pg = PostgresServer(fsync=False, max_connections=100).start()
    yield pg
    pg.stop()


@pytest.fixture(scope="module")
def replicas(server: PostgresServer,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    pair = Replicas.start(tmp_path_factory.mktemp("faults"), server.create_database())
    yield pair
    pair.stop()


@pytest.fixture
def outage(server: PostgresServer) -> Iterator[PostgresServer]:
    """The server, started again after the test if the test left it stopped."""
    yield server
    if server.pid is None:
        server.start()


def unavailable(r: requests.Response) -> bool:
    """A 503 asking to retry after some seconds."""
    return r.status_code == 503 and r.headers.get("Retry-After", "").isdigit()


def test_an_unreachable_database_at_start_is_one_line_without_the_password(
        server: PostgresServer, tmp_path: Path) -> None:
    nobody_there = f"postgresql://fplus:s3cret-{uuid.uuid4().hex}@127.0.0.1:{free_port()}/db"
    assert "refused" in refusal(tmp_path, nobody_there).lower()
    wrong_password = server.admin_url.replace(server.password, "not-" + server.password)
    refusal(tmp_path, wrong_password)


def test_a_lost_database_answers_503_and_the_replicas_recover_without_restart(
        replicas: Replicas, outage: PostgresServer) -> None:
    a, b = replicas.admin(0), replicas.admin(1)
    app, obj, group = (make_object(a, uuids.Class.App), make_object(a, uuids.Class.Device),
                       make_class(a))
    known_to(b, app, obj, group)
    url = f"/v2/app/{app}/object/{obj}"
    assert a.put(url, json={"v": "before"}).status_code == 201
    body = enrolment(group, app, 0)
    with RawNotify.login(b) as ws:
        watch = ws.watch(entry_url(app, obj))
        assert ws.next(watch)["response"]["body"] == {"v": "before"}

        outage.stop(keep_data=True)
        on_a = [lambda: a.put(url, json={"v": "during"}),
                lambda: a.post("/v2/principal", json=body)]
        on_b = [lambda: b.get(url), lambda: b.post("/token")]
        for r in at_once([partial(one_by_one, on_a), partial(one_by_one, on_b)]):
            assert unavailable(r), (r.request.method, r.request.url, r.status_code, r.text)
        for api in (a, b):  # the failed enrolment left nothing in memory either
            assert api.get(f"/v2/object/{body['uuid']}").status_code == 404
            assert body["uuid"] not in api.get(f"/v2/class/{group}/member").json()

        outage.start()
        eventually(lambda: a.put(url, json={"v": "after"}).status_code == 204,
                   "a write through A once the database is back", RECOVERY)
        assert ws.next(watch, RECOVERY)["response"]["body"] == {"v": "after"}
    with RawNotify.login(b) as ws:
        watch = ws.watch(entry_url(app, obj))
        ws.next(watch)
        assert a.put(url, json={"v": "later"}).status_code == 204
        assert ws.next(watch)["response"]["body"] == {"v": "later"}
    assert rows_of(replicas.database, body["uuid"]) == (0, 0, 0, 0, 0)


def test_a_database_lost_during_multi_row_writes_leaves_none_partial(
        replicas: Replicas, outage: PostgresServer) -> None:
    """One writer on each replica (their writes interleave), so the stop is likely to catch
    a transaction in the middle."""
    a, b = replicas.admin(0), replicas.admin(1)
    group, app = make_class(a), make_object(a, uuids.Class.App)
    known_to(b, group, app)
    streams = [enrol_stream(api, group, app, threads=1) for api in (a, b)]
    for stream, _ in streams:
        stream.wait_for(10)
    outage.stop(keep_data=True)
    for stream, _ in streams:
        eventually(lambda s=stream: any(status == 503 for _, status in s.results), "a 503")
    outage.start()
    bodies, created = {}, set()
    for i, (stream, sent) in enumerate(streams):
        answered = dict(stream.stop())
        assert not stream.errors and set(answered.values()) <= {201, 503}, (stream.errors,
                                                                           answered)
        bodies |= {(i, n): body for n, body in sent.items()}
        created |= {(i, n) for n, status in answered.items() if status == 201}
    for api in (a, b):
        eventually(lambda api=api: api.post("/v2/object", json={"class": uuids.Class.Device}).ok,
                   f"a write through {api.base}, which has caught up since", RECOVERY)
        check_whole_or_absent(api, replicas.database, group, bodies, created)


def test_writes_waiting_during_an_outage_each_get_their_503(
        replicas: Replicas, outage: PostgresServer) -> None:
    """Concurrent writes through one replica while the database is down: each is answered
    503 within the 10 s the project's own client waits (ConfigStoreClient's timeout), not
    queued behind the others' waits for a connection."""
    a = replicas.admin(0)
    writes = [partial(Api(a.base, a.auth).post, "/v2/object", json={"class": uuids.Class.Device},
                      timeout=CLIENT_TIMEOUT) for _ in range(4)]
    outage.stop(keep_data=True)
    eventually(lambda: "connection after" in writes[0]().text,  # psycopg_pool's PoolTimeout
               "the broken pooled connections used up, so writes wait for a new one")
    answers = at_once([partial(answer_or_error, w) for w in writes])
    outage.start()
    shown = [r.status_code if isinstance(r, requests.Response) else type(r).__name__
             for r in answers]
    assert all(isinstance(r, requests.Response) and unavailable(r) for r in answers), (
        f"concurrent writes during the outage got {shown}")


def one_by_one(calls: list[Callable[[], requests.Response]]) -> requests.Response:
    """Make ``calls`` in turn; the first answer that is not a 503 with Retry-After, else the
    last."""
    for call in calls:
        r = call()
        if not unavailable(r):
            return r
    return r


def answer_or_error(call: Callable[[], requests.Response]) -> requests.Response | Exception:
    try:
        return call()
    except requests.RequestException as exc:
        return exc
