"""The elector on a real database lease: one leader at a time; a leader that cannot renew
stops on its own (saying so once) and a standby takes over; a clean stop hands over at once."""

from __future__ import annotations

import logging
import threading

import pytest

from fplus.cluster_manager.db import DatabaseUnavailable
from fplus.cluster_manager.leader import DatabaseLease, LeaderElector
from tests.cluster_manager.ha.conftest import OpenDatabase
from tests.cluster_manager.ha.test_database_lease import _until


class Breakable:
    """A lease whose database can be cut off (every call raises meanwhile)."""

    def __init__(self, lease: DatabaseLease) -> None:
        self.lease, self.duration = lease, lease.duration
        self.broken = threading.Event()

    def acquire(self, identity: str) -> str | None:
        if self.broken.is_set():
            raise DatabaseUnavailable("the database cannot be reached (cut by the test)")
        return self.lease.acquire(identity)

    def release(self, identity: str) -> None:
        self.lease.release(identity)


class Work:
    """Counts the starts and stops of the leader's work."""

    def __init__(self) -> None:
        self.starts = self.stops = 0
        self.running = False

    def start(self) -> None:
        assert not self.running
        self.starts, self.running = self.starts + 1, True

    def stop(self) -> None:
        assert self.running
        self.stops, self.running = self.stops + 1, False


def _elector(lease, name: str, work: Work) -> LeaderElector:
    return LeaderElector(lease, name, work.start, work.stop, renew=0.1, retry=0.1)


def test_a_leader_that_cannot_renew_stops_and_a_standby_takes_over(
        open_db: OpenDatabase, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "fplus.cluster_manager.leader")
    cut = Breakable(DatabaseLease(open_db(), duration=1.0))
    a_work, b_work = Work(), Work()
    a = _elector(cut, "replica-a", a_work).start()
    try:
        _until(lambda: a.status().leading, what="a to lead")
        b = _elector(DatabaseLease(open_db(), duration=1.0), "replica-b", b_work).start()
        try:
            _until(lambda: b.status().holder == "replica-a", what="b to see a lead")
            assert not b.status().leading and b.status().role == "standby"
            cut.broken.set()
            # An elector's status turns just before its work starts or stops: wait for the
            # work. On a loaded machine a renewal slower than the 1 s lease stops a before
            # the cut and, once it lands, a leads again (it leads until its last sent
            # renewal's lease ends): so each start is paired with a stop, not counted.
            _until(lambda: not a.status().leading and not a_work.running,
                   what="a to stop leading")
            assert a_work.starts == a_work.stops >= 1
            _until(lambda: b.status().leading and b_work.running, what="b to take over")
            assert a.status().problem
            cut.broken.clear()
            _until(lambda: a.status().holder == "replica-b", what="a to see b lead")
            assert not a.status().leading and a_work.starts == a_work.stops
            assert b_work.starts == 1
        finally:
            b.stop()
    finally:
        a.stop()
    said = [r.getMessage() for r in caplog.records if "stopped leading" in r.getMessage()]
    assert said and all("could not renew" in line for line in said), said
    assert len(said) == a_work.stops  # once per loss, never twice for one
    unreachable = [r for r in caplog.records if "cannot reach the leader lease" in r.message]
    assert len(unreachable) == 1  # once for the whole outage, not per attempt


def test_a_clean_stop_hands_the_lease_over(open_db: OpenDatabase) -> None:
    a_work, b_work = Work(), Work()
    a = _elector(DatabaseLease(open_db(), duration=60), "replica-a", a_work).start()
    b = _elector(DatabaseLease(open_db(), duration=60), "replica-b", b_work)
    try:
        _until(lambda: a.status().leading, what="a to lead")
        b.start()
        _until(lambda: b.status().holder == "replica-a", what="b to see a lead")
        a.stop()  # released: b need not wait out the 60 s lease
        assert not a_work.running and a_work.stops == 1
        _until(lambda: b.status().leading, what="b to take over")
    finally:
        b.stop()
        a.stop()


def test_lease_timings_must_fit_the_duration(open_db: OpenDatabase) -> None:
    with pytest.raises(ValueError, match="shorter than the lease duration"):
        LeaderElector(DatabaseLease(open_db(), duration=2), "x", lambda: None,
                      lambda: None, renew=2, retry=1)
