"""The Kubernetes Lease with the real ``kubernetes`` client against the kmock emulator (with
the additions of :mod:`.lease_kubernetes`): created, renewed, expiring by the observer's own
clock, taken over, a lost compare-and-swap, a stale holder that cannot renew, a release."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from fplus.cluster_manager.leader import LeaderElector
from fplus.cluster_manager.leader.kubernetes_lease import KubernetesLease
from tests.cluster_manager.ha.lease_kubernetes import LeaseKubernetes
from tests.cluster_manager.ha.test_database_lease import _until
from tests.cluster_manager.ha.test_elector import Work
from tests.edge_sync.emulator import KubeHarness

# kmock 0.8 loads its bundled discovery with a deprecated importlib call
pytestmark = pytest.mark.filterwarnings("ignore:read_binary is deprecated:DeprecationWarning")

NAMESPACE = "fplus"
LEASES = "coordination.k8s.io/v1/leases"


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def kube() -> Iterator[KubeHarness]:
    harness = KubeHarness(LeaseKubernetes(), flux_resources=False)
    yield harness
    harness.close()


def _lease(kube: KubeHarness, clock: Clock | None = None) -> KubernetesLease:
    return KubernetesLease(kube.api(), NAMESPACE, "cm", duration=10,
                           clock=clock or Clock())


def _stored(kube: KubeHarness) -> dict:
    return kube.objects(LEASES, NAMESPACE)["cm"]


def test_created_then_held_then_renewed(kube: KubeHarness) -> None:
    a, b = _lease(kube), _lease(kube)
    assert a.acquire("replica-a") == "replica-a"
    created = _stored(kube)
    assert created["spec"]["holderIdentity"] == "replica-a"
    assert created["spec"]["leaseDurationSeconds"] == 10
    assert created["spec"]["leaseTransitions"] == 0
    assert created["spec"]["acquireTime"] == created["spec"]["renewTime"]
    assert b.acquire("replica-b") == "replica-a"
    assert a.acquire("replica-a") == "replica-a"
    renewed = _stored(kube)
    assert renewed["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    assert renewed["spec"]["acquireTime"] == created["spec"]["acquireTime"]
    assert renewed["spec"]["renewTime"] >= created["spec"]["renewTime"]
    assert renewed["spec"]["leaseTransitions"] == 0


def test_expiry_is_judged_by_the_observers_clock_from_the_last_change(kube: KubeHarness) -> None:
    clock = Clock()
    a, b = _lease(kube), _lease(kube, clock)
    assert a.acquire("replica-a") == "replica-a"
    assert b.acquire("replica-b") == "replica-a"  # b starts watching this record
    clock.now += 9
    assert a.acquire("replica-a") == "replica-a"  # renewed: a new record
    clock.now += 2
    assert b.acquire("replica-b") == "replica-a"  # b sees the new record now: not expired
    clock.now += 10
    assert b.acquire("replica-b") == "replica-b"  # unchanged for its duration: taken over
    assert _stored(kube)["spec"]["leaseTransitions"] == 1
    assert a.acquire("replica-a") == "replica-b"  # the stale holder cannot renew


def test_a_lost_compare_and_swap_takes_nothing(kube: KubeHarness,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    a, b = _lease(kube), _lease(kube, clock)
    assert a.acquire("replica-a") == "replica-a"
    stale = b._read()
    assert b.acquire("replica-b") == "replica-a"
    clock.now += 11  # b thinks the lease expired ...
    assert a.acquire("replica-a") == "replica-a"  # ... but a renewed meanwhile
    monkeypatch.setattr(b, "_read", lambda: stale)  # b decides on what it read before
    assert b.acquire("replica-b") == "replica-a"  # 409: nothing taken
    assert _stored(kube)["spec"]["holderIdentity"] == "replica-a"


def test_a_released_lease_is_free_at_once(kube: KubeHarness) -> None:
    a, b = _lease(kube), _lease(kube)
    assert a.acquire("replica-a") == "replica-a"
    b.release("replica-b")  # not its lease: nothing happens
    assert _stored(kube)["spec"]["holderIdentity"] == "replica-a"
    a.release("replica-a")
    assert not _stored(kube)["spec"].get("holderIdentity")
    assert b.acquire("replica-b") == "replica-b"
    assert _stored(kube)["spec"]["leaseTransitions"] == 1


def test_two_creating_at_once_one_wins(kube: KubeHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _lease(kube), _lease(kube)
    monkeypatch.setattr(b, "_read", lambda: None)  # b saw no lease before a created it
    assert a.acquire("replica-a") == "replica-a"
    assert b.acquire("replica-b") is None  # 409 AlreadyExists on create
    assert _stored(kube)["spec"]["holderIdentity"] == "replica-a"


def test_electors_on_the_lease_hand_over_when_the_leader_is_cut_off(kube: KubeHarness) -> None:
    """The leader reaches the API server through the relay, which the test cuts: it stops
    leading on its own and the standby (connected directly) takes the lease over.

    On a loaded machine a renewal can take longer than the 1 s lease: the leader then stops
    and, once that renewal lands, leads again (by design: it leads only until its last sent
    renewal ends). So the counts are not exact; what holds is that each start of the work
    is paired with a stop, and an elector's status changes before its work does (waited
    for here)."""
    cfg = client.Configuration()
    cfg.host = kube.url
    through_relay = KubernetesLease(client.ApiClient(cfg), NAMESPACE, "cm", duration=1,
                                    timeout=0.5)
    direct = KubernetesLease(kube.api(), NAMESPACE, "cm", duration=1)
    a_work, b_work = Work(), Work()
    a = LeaderElector(through_relay, "replica-a", a_work.start, a_work.stop, renew=0.2,
                      retry=0.2).start()
    b = LeaderElector(direct, "replica-b", b_work.start, b_work.stop, renew=0.2, retry=0.2)
    try:
        _until(lambda: a.status().leading, what="a to lead")
        b.start()
        _until(lambda: b.status().holder == "replica-a", what="b to see a lead")
        with kube.outage():
            _until(lambda: b.status().leading and b_work.running, what="b to take over")
            _until(lambda: not a_work.running, what="a to stop its work")
            assert not a.status().leading and a_work.starts == a_work.stops >= 1
        _until(lambda: a.status().holder == "replica-b", what="a to see b lead")
        assert not a.status().leading and not a_work.running
        assert a_work.starts == a_work.stops and b_work.starts >= 1
        assert _stored(kube)["spec"]["leaseTransitions"] == 1
    finally:
        b.stop()
        a.stop()
