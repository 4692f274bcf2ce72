"""The lease row in the Cluster Manager's database, on real SQLite and real PostgreSQL: taken,
renewed, expiring by the database's clock, taken over, never renewed by a stale holder."""

from __future__ import annotations

import threading
import time

from fplus.cluster_manager.leader import DatabaseLease
from tests.cluster_manager.ha.conftest import OpenDatabase


def _until(check, timeout: float = 10.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return result


def test_taken_then_held_then_renewed(open_db: OpenDatabase) -> None:
    a, b = DatabaseLease(open_db(), duration=30), DatabaseLease(open_db(), duration=30)
    assert a.holder() is None
    assert a.acquire("replica-a") == "replica-a"
    assert b.acquire("replica-b") == "replica-a"  # held: not taken
    assert a.acquire("replica-a") == "replica-a"  # renewed
    assert b.holder() == "replica-a"
    assert a.transitions() == 0


def test_an_expired_lease_is_taken_over_and_the_stale_holder_cannot_renew(
        open_db: OpenDatabase) -> None:
    a, b = DatabaseLease(open_db(), duration=0.3), DatabaseLease(open_db(), duration=30)
    assert a.acquire("replica-a") == "replica-a"
    assert b.acquire("replica-b") == "replica-a"
    _until(lambda: b.acquire("replica-b") == "replica-b", what="the lease to expire")
    assert a.acquire("replica-a") == "replica-b"  # too late: the row is someone else's
    assert a.holder() == "replica-b"
    assert b.transitions() == 1


def test_a_released_lease_is_free_at_once(open_db: OpenDatabase) -> None:
    a, b = DatabaseLease(open_db(), duration=30), DatabaseLease(open_db(), duration=30)
    assert a.acquire("replica-a") == "replica-a"
    b.release("replica-b")  # not its lease: nothing happens
    assert b.holder() == "replica-a"
    a.release("replica-a")
    assert b.holder() is None
    assert b.acquire("replica-b") == "replica-b"


def test_of_many_at_once_exactly_one_takes_it(open_db: OpenDatabase) -> None:
    leases = [DatabaseLease(open_db(), duration=30) for _ in range(8)]
    barrier = threading.Barrier(len(leases))
    won: list[str | None] = [None] * len(leases)

    def take(i: int) -> None:
        barrier.wait()
        won[i] = leases[i].acquire(f"replica-{i}")

    threads = [threading.Thread(target=take, args=(i,)) for i in range(len(leases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = {f"replica-{i}" for i, holder in enumerate(won) if holder == f"replica-{i}"}
    assert len(winners) == 1
    assert set(won) == winners  # every loser was told who won
