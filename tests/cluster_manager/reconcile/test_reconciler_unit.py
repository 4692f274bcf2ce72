"""The Reconciler without a Config Store process: notify deliveries in, reconciles out."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fplus.cluster_manager.model.apps_and_roles import CONFIG_APP, REQUEST_APP, STATUS_APP
from fplus.cluster_manager.reconcile.desired_state import TEMPLATE_APP
from fplus.cluster_manager.reconcile.job import Env
from fplus.cluster_manager.reconcile.reconciler import Reconciler
from fplus.config_store.client import SearchDelta
from harness.stack import wait_for
from tests.cluster_manager.reconcile.fakes import FakeConfigDB, FakeRepos

C1 = "11111111-1111-4111-8111-111111111111"
C2 = "22222222-2222-4222-8222-222222222222"
GONE = "33333333-3333-4333-8333-333333333333"
SPEC = {"name": "line-1", "namespace": "fplus-edge"}


class FakeSub:
    """A subscription handle whose health the test sets."""

    def __init__(self) -> None:
        self.problem: str | None = None
        self.refused = False


class FakeNotify:
    """Records subscriptions; the test delivers updates by calling the callbacks."""

    def __init__(self, cs: Any) -> None:
        self.searches: dict[str, Callable[[SearchDelta], None]] = {}
        self.watches: dict[tuple[str, str], Callable[[Any], None]] = {}
        self.subs: dict[str, FakeSub] = {}
        self.closed = False

    def search(self, app: str, callback: Callable[[SearchDelta], None], *,
               deltas: bool = False) -> FakeSub:
        assert deltas, "the reconciler follows its apps as deltas"
        self.searches[app] = callback
        return self.subs.setdefault(app, FakeSub())

    def watch(self, app: str, obj: str, callback: Callable[[Any], None]) -> FakeSub:
        self.watches[(app, obj)] = callback
        return self.subs.setdefault(obj, FakeSub())

    def close(self) -> None:
        self.closed = True



@pytest.fixture
def running(env: Env) -> Iterator[tuple[Reconciler, FakeNotify]]:
    notify: list[FakeNotify] = []
    reconciler = Reconciler(env, workers=2, backoff_initial=0.05,
                            notify=lambda cs: notify.append(FakeNotify(cs)) or notify[-1])
    reconciler.start()
    yield reconciler, notify[0]
    reconciler.stop()
    assert notify[0].closed


def deliver(cs: FakeConfigDB, notify: FakeNotify, configs: dict[str, Any]) -> None:
    for cluster, config in configs.items():
        cs.put_config(CONFIG_APP, cluster, config)
    notify.searches[CONFIG_APP](SearchDelta(
        True, configs, {c: cs.etags[(CONFIG_APP, c)] for c in configs}))


def phase(cs: FakeConfigDB, cluster: str) -> str | None:
    return (cs.entries.get((STATUS_APP, cluster)) or {}).get("phase")


def idle(reconciler: Reconciler) -> bool:
    return reconciler.queue.depth() == 0


def test_start_subscribes_to_entries_and_the_template(
        running: tuple[Reconciler, FakeNotify]) -> None:
    _, notify = running
    assert set(notify.searches) == {CONFIG_APP, REQUEST_APP, TEMPLATE_APP}
    assert notify.watches == {}


def test_the_first_delivery_queues_every_cluster_and_every_leftover_status(
        running: tuple[Reconciler, FakeNotify], cs: FakeConfigDB) -> None:
    reconciler, notify = running
    cs.put_config(STATUS_APP, GONE, {"spec": {"name": "gone", "namespace": "x"}})
    assert not reconciler.ready.is_set()
    deliver(cs, notify, {C1: SPEC})
    assert reconciler.ready.is_set()
    wait_for(lambda: phase(cs, C1) == "Ready" and (STATUS_APP, GONE) not in cs.entries, 5)


def test_later_deliveries_queue_only_what_changed(
        running: tuple[Reconciler, FakeNotify], cs: FakeConfigDB, repos: FakeRepos) -> None:
    reconciler, notify = running
    deliver(cs, notify, {C1: SPEC, C2: SPEC | {"name": "line-2"}})
    wait_for(lambda: phase(cs, C1) == phase(cs, C2) == "Ready" and idle(reconciler), 5)
    before = cs.count("get_config", STATUS_APP, C1)
    notify.searches[CONFIG_APP](SearchDelta(
        True, {C1: SPEC, C2: SPEC | {"name": "line-2", "namespace": "other"}},
        {C1: cs.etags[(CONFIG_APP, C1)], C2: "changed"}))
    wait_for(lambda: cs.count("get_config", STATUS_APP, C2) == 2 and idle(reconciler), 5)
    assert cs.count("get_config", STATUS_APP, C1) == before  # unchanged: not reconciled


def test_a_template_change_re_renders_clusters_that_were_current(
        running: tuple[Reconciler, FakeNotify], cs: FakeConfigDB, repos: FakeRepos) -> None:
    reconciler, notify = running
    template = cs.entries[(TEMPLATE_APP, TEMPLATE_APP)]
    templates = notify.searches[TEMPLATE_APP]
    templates(SearchDelta(True, {TEMPLATE_APP: template}, {TEMPLATE_APP: "t1"}))  # no re-render
    deliver(cs, notify, {C1: SPEC})
    wait_for(lambda: phase(cs, C1) == "Ready" and idle(reconciler), 5)
    assert repos.commits == 1
    templates(SearchDelta(False, {TEMPLATE_APP: template | {"more.yaml": [{"kind": "More"}]}},
                          {TEMPLATE_APP: "t2"}))
    wait_for(lambda: repos.commits == 2, 5)
    assert "edo/cluster/more.yaml" in repos.files[C1]


def test_a_named_template_re_renders_only_the_clusters_pinned_to_it(
        running: tuple[Reconciler, FakeNotify], cs: FakeConfigDB, repos: FakeRepos) -> None:
    reconciler, notify = running
    template = cs.entries[(TEMPLATE_APP, TEMPLATE_APP)]
    named = str(uuid.UUID(int=77))
    templates = notify.searches[TEMPLATE_APP]
    templates(SearchDelta(True, {TEMPLATE_APP: template, named: template},
                          {TEMPLATE_APP: "t1", named: "n1"}))
    deliver(cs, notify, {C1: SPEC | {"fluxTemplate": named}, C2: SPEC | {"name": "line-2"}})
    wait_for(lambda: phase(cs, C1) == phase(cs, C2) == "Ready" and idle(reconciler), 5)
    assert repos.commits == 2
    templates(SearchDelta(False, {named: template | {"canary.yaml": [{"kind": "Canary"}]}},
                          {named: "n2"}))
    wait_for(lambda: repos.commits == 3 and idle(reconciler), 5)
    assert "edo/cluster/canary.yaml" in repos.files[C1]
    assert "edo/cluster/canary.yaml" not in repos.files[C2]


def test_a_failed_reconcile_is_retried(running: tuple[Reconciler, FakeNotify],
                                       cs: FakeConfigDB, repos: FakeRepos) -> None:
    _, notify = running
    repos.fail_next = RuntimeError("Git server down")
    deliver(cs, notify, {C1: SPEC})
    wait_for(lambda: phase(cs, C1) == "Ready", 5)


def test_health_follows_the_subscriptions(running: tuple[Reconciler, FakeNotify],
                                          cs: FakeConfigDB) -> None:
    reconciler, notify = running
    assert reconciler.health() == (False, "waiting for the first set of cluster configuration "
                                          "entries")
    deliver(cs, notify, {C1: SPEC})
    assert reconciler.health() == (True, None)
    notify.subs[CONFIG_APP].problem = "not connected to notify/v2: connection refused"
    assert reconciler.health() == (False, "notify subscription to the cluster configurations "
                                          "is failing: not connected to notify/v2: connection "
                                          "refused")
    notify.subs[CONFIG_APP].problem = None
    notify.subs[TEMPLATE_APP].problem = "the Config Store ended the WATCH (status 500)"
    synced, reason = reconciler.health()
    assert not synced and reason is not None and "Flux template" in reason
    notify.subs[TEMPLATE_APP].problem = None
    assert reconciler.health() == (True, None)


def test_a_refused_search_is_not_an_empty_set_of_clusters(
        running: tuple[Reconciler, FakeNotify], cs: FakeConfigDB) -> None:
    """Losing read access empties the delivery; that must not tear every cluster down."""
    reconciler, notify = running
    deliver(cs, notify, {C1: SPEC})
    wait_for(lambda: phase(cs, C1) == "Ready" and idle(reconciler), 5)
    notify.searches[CONFIG_APP](SearchDelta(True, refused=True))
    assert reconciler.env.desired.clusters() == [C1]
    assert idle(reconciler) and phase(cs, C1) == "Ready"
    notify.searches[CONFIG_APP](SearchDelta(True))  # readable and empty: now it is gone
    wait_for(lambda: phase(cs, C1) != "Ready", 5)


def test_an_unreadable_entry_is_not_a_deleted_cluster(
        running: tuple[Reconciler, FakeNotify], cs: FakeConfigDB) -> None:
    """A configuration the Config Store cannot serve (a poisoned entry: a 5xx child) keeps
    its cluster, even at the first delivery where a leftover status would be torn down."""
    reconciler, notify = running
    cs.put_config(STATUS_APP, GONE, {"spec": {"name": "gone", "namespace": "x"}})
    cs.put_config(STATUS_APP, C2, {"spec": {"name": "line-2", "namespace": "x"}})
    cs.put_config(CONFIG_APP, C1, SPEC)
    notify.searches[CONFIG_APP](SearchDelta(
        True, {C1: SPEC}, {C1: cs.etags[(CONFIG_APP, C1)]}, unreadable=frozenset({C2})))
    wait_for(lambda: phase(cs, C1) == "Ready" and (STATUS_APP, GONE) not in cs.entries
             and idle(reconciler), 5)
    assert (STATUS_APP, C2) in cs.entries  # left as it was, not torn down


def test_stopped_and_started_again_it_begins_afresh(env: Env, cs: FakeConfigDB) -> None:
    """A replica that stops leading stops reconciling; leading again, it subscribes anew and
    treats the first delivery as a first start (every cluster, every leftover status)."""
    notify: list[FakeNotify] = []
    reconciler = Reconciler(env, workers=2, backoff_initial=0.05,
                            notify=lambda cs: notify.append(FakeNotify(cs)) or notify[-1])
    reconciler.start()
    try:
        deliver(cs, notify[0], {C1: SPEC})
        wait_for(lambda: phase(cs, C1) == "Ready" and idle(reconciler), 5)
        first_queue = reconciler.queue
        reconciler.stop()
        assert notify[0].closed and not reconciler.running
        reconciler.stop()  # twice is harmless
        cs.put_config(STATUS_APP, GONE, {"spec": {"name": "gone", "namespace": "x"}})
        reconciler.start()
        assert len(notify) == 2 and reconciler.queue is not first_queue
        assert not reconciler.ready.is_set() and not reconciler.env.desired.known
        before = cs.count("get_config", STATUS_APP, C1)
        deliver(cs, notify[1], {C1: SPEC})
        wait_for(lambda: (STATUS_APP, GONE) not in cs.entries and idle(reconciler), 5)
        assert cs.count("get_config", STATUS_APP, C1) == before + 1  # looked at again
        assert reconciler.ready.is_set() and phase(cs, C1) == "Ready"
    finally:
        reconciler.stop()
