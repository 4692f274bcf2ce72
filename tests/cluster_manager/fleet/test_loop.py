"""The leader's rollout loop, with the fleet deployment kind, on a stand-in notify client and
Config Store (no process): it writes nothing until every input is known, applies the plan
once, and a refused app stops it."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from typing import Any

from fplus.cluster_manager.model.edge_deployments import Deployment
from fplus.cluster_manager.rollouts.fleet_entry import member_uuid
from fplus.cluster_manager.rollouts.fleet_expansion import Plan
from fplus.cluster_manager.rollouts.fleet_kind import FleetKind
from fplus.cluster_manager.rollouts.loop import RolloutLoop
from fplus.config_store.client import ConfigStoreError, SearchDelta

A, F, CHART = (str(uuid.UUID(int=n)) for n in (1, 2, 3))
INPUTS = RolloutLoop(None, [FleetKind()]).inputs  # type: ignore[arg-type]


class Sub:
    refused = False


class Notify:
    """Hands out subscriptions; the test delivers to their callbacks."""

    def __init__(self) -> None:
        self.callbacks: dict[str, Any] = {}
        self.subs: dict[str, Sub] = {}

    def search(self, app: str, callback: Any, *, deltas: bool = False) -> Sub:
        assert deltas  # the loop keeps mirrors of its own
        self.callbacks[app] = callback
        self.subs[app] = Sub()
        return self.subs[app]

    def close(self) -> None:
        pass


class Store:
    """Records the calls a write and a removal make."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.written = threading.Event()

    def create_object(self, klass: str, obj: str) -> str:
        self.calls.append(("create", obj))
        return obj

    def set_name(self, obj: str, name: str) -> None:
        self.calls.append(("name", obj, name))

    def put_config(self, app: str, obj: str, value: Any, **_: Any) -> None:
        self.calls.append(("put", obj, value["cluster"]))
        self.written.set()

    def delete_config(self, app: str, obj: str) -> None:
        self.calls.append(("delete", obj))

    def delete_object(self, obj: str) -> None:
        self.calls.append(("delete-object", obj))


def deliver(notify: Notify, key: str, children: dict[str, Any], *, full: bool = True,
            refused: bool = False) -> None:
    notify.callbacks[INPUTS[key]](SearchDelta(full=full, children=children,
                                              etags={k: repr(v) for k, v in children.items()},
                                              refused=refused))


@contextlib.contextmanager
def running(store: Store, *, known: bool = False) -> Iterator[tuple[Notify, RolloutLoop]]:
    """A started loop on a fake notify (every input delivered empty if ``known``)."""
    notify = Notify()
    loop = RolloutLoop(store, [FleetKind()], notify=lambda _cs: notify,  # type: ignore[arg-type]
                       settle=0.0)
    loop.start()
    try:
        if known:
            for key in INPUTS:
                deliver(notify, key, {})
        yield notify, loop
    finally:
        loop.stop()


def test_writes_once_every_input_is_known_and_not_before() -> None:
    store = Store()
    with running(store) as (notify, _loop):
        deliver(notify, "fleets", {F: {"name": "h", "chart": CHART, "clusters": [A]}})
        deliver(notify, "configs", {A: {"name": "a"}})
        deliver(notify, "rollouts", {})
        deliver(notify, "edges", {})
        deliver(notify, "windows", {})
        assert not store.written.wait(0.3)  # the deployments are not known yet
        deliver(notify, "deployments", {}, full=False, refused=True)
        assert not store.written.wait(0.3)  # refused is unknown, not empty
        deliver(notify, "deployments", {})
        assert store.written.wait(5)
    member = member_uuid(F, A)
    assert store.calls == [("create", member), ("name", member, "h"), ("put", member, A)]


class Failing(Store):
    def put_config(self, app: str, obj: str, value: Any, **_: Any) -> None:
        raise ConfigStoreError(503, None, "down")


def test_apply_removes_and_a_failed_write_fails_the_pass_but_not_the_rest() -> None:
    store = Store()
    assert FleetKind().apply(Plan(removals=["x"]), RolloutLoop(store))  # type: ignore[arg-type]
    assert store.calls == [("delete", "x"), ("delete-object", "x")]
    failing = Failing()
    plan = Plan(writes=[(Deployment("d", "h", A, CHART, fleet=F), False)], removals=["x"])
    assert not FleetKind().apply(plan, RolloutLoop(failing))  # type: ignore[arg-type]
    assert failing.calls == [("delete", "x"), ("delete-object", "x")]


class Statuses(Store):
    """Keeps what is put, whatever the app."""

    def put_config(self, app: str, obj: str, value: Any, **_: Any) -> None:
        self.calls.append(("put", obj, value["state"]))


def test_a_written_rollout_status_is_taken_as_read_until_notify_catches_up() -> None:
    store = Statuses()
    with running(store, known=True) as (_notify, loop):
        status = {"rolloutId": "r", "state": "Progressing"}
        assert FleetKind().apply(Plan(rollouts={F: status}), loop)
        assert store.calls == [("put", F, "Progressing")]
        found = loop.snapshot()
        assert found is not None and found.inputs["rollouts"] == {F: status}
        assert FleetKind().apply(Plan(rollout_removals=[F]), loop)
        found = loop.snapshot()
        assert found is not None and found.inputs["rollouts"] == {}


def test_edge_reports_cause_a_pass_only_while_a_rollout_progresses() -> None:
    with running(Statuses(), known=True) as (notify, loop):
        settled = _settle(loop)
        deliver(notify, "edges", {A: {"heartbeat": 1}}, full=False)
        assert _settle(loop) == settled  # kept, but no pass
        found = loop.snapshot()
        assert found is not None and found.inputs["edges"] == {A: {"heartbeat": 1}}
        # a cluster rollout's status (a fleet pass leaves it alone), progressing
        deliver(notify, "rollouts", {F: {"rolloutId": "r", "state": "Progressing",
                                         "kind": "cluster"}}, full=False)
        rolling = _settle(loop)
        assert rolling > settled
        deliver(notify, "edges", {A: {"heartbeat": 2}}, full=False)
        assert _settle(loop) > rolling


def _settle(loop: RolloutLoop) -> int:
    """The loop's pass count once it has stayed the same for 0.3 s."""
    while True:
        before = loop.passes
        threading.Event().wait(0.3)
        if loop.passes == before:
            return before
