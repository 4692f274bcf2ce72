"""``kill -9`` of one replica: the other keeps serving throughout, and a replica killed in
the middle of multi-row writes leaves each of them whole or absent."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from fplus.config_store import uuids
from harness.servers import Api
from tests.conftest import make_class, make_object

from .pair import Replicas, known_to
from .writes import Stream, check_whole_or_absent, enrol_stream


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


def test_a_replica_killed_during_multi_row_writes_leaves_none_partial(
        a_back: Replicas) -> None:
    pair = a_back
    a, b = pair.admin(0), pair.admin(1)
    group, app = make_class(a), make_object(a, uuids.Class.App)
    known_to(b, group, app)
    stream, bodies = enrol_stream(a, group, app)
    stream.wait_for(20)
    pair.stop_one(0, signal.SIGKILL)
    answered = dict(stream.stop())  # the requests in flight at the kill got no answer
    assert set(answered.values()) == {201}, answered
    assert len(bodies) > len(answered), "no enrolment was in flight at the kill"
    make_object(b, uuids.Class.Device)  # a write through B: B has caught up with A's log
    check_whole_or_absent(b, pair.database, group, bodies, set(answered))
