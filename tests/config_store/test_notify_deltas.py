"""SEARCH as deltas against a real Config Store: the Cluster Manager's desired state, fed
deltas, sees every change exactly as the whole-state delivery did, across reconnections.

Two subscriptions to one app on one client: the whole-state one (what the reconciler used
before) diffed update by update as the reconciler did, and the delta one applied to a
:class:`DesiredState` as the reconciler now does. At each quiet point both are compared with
the entries read over HTTP and with each other: the clusters they named as changed since
the last quiet point, and the state they hold.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from fplus.cluster_manager.reconcile.desired_state import DesiredState
from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient, NotifyClient, SearchDelta, SearchState
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.conftest import make_object


class WholeStateDiff:
    """The reconciler before deltas: each whole state compared with the previous one."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state: dict[str, Any] = {}
        self.etags: dict[str, str | None] = {}
        self.changed: set[str] = set()

    def __call__(self, state: SearchState) -> None:
        with self.lock:
            prev, prev_etags = self.state, self.etags
            self.changed |= {k for k in state.keys() | prev.keys()
                             if k not in state or k not in prev
                             or state.etags.get(k) != prev_etags.get(k)}
            self.state, self.etags = dict(state), dict(state.etags)

    def take(self) -> set[str]:
        with self.lock:
            changed, self.changed = self.changed, set()
        return changed


class DeltaFed:
    """The reconciler now: deltas into its desired state, the changed clusters collected."""

    def __init__(self, client: ConfigStoreClient) -> None:
        self.lock = threading.Lock()
        self.desired = DesiredState(client)  # type: ignore[arg-type]
        self.changed: set[str] = set()

    def __call__(self, delta: SearchDelta) -> None:
        changed = self.desired.apply_configs(delta)
        with self.lock:
            self.changed |= changed

    def take(self) -> set[str]:
        with self.lock:
            changed, self.changed = self.changed, set()
        return changed

    def state(self) -> dict[str, Any]:
        found = {c: self.desired.entry(c) for c in self.desired.clusters()}
        return {c: entry[0] for c, entry in found.items() if entry is not None}


def _listing(api: Api, app: str) -> dict[str, Any]:
    r = api.get(f"/v2/app/{app}/object")
    assert r.status_code == 200, r.text
    return {obj: api.get(f"/v2/app/{app}/object/{obj}").json() for obj in r.json()}


def _settle(what: Callable[[], bool], timeout: float = 45.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "the subscriptions did not settle"
        time.sleep(0.05)


def _write(api: Api, rng: random.Random, app: str, objs: list[str]) -> str:
    """One random write: a PUT (sometimes of the same value), a merge PATCH or a DELETE."""
    obj, roll = rng.choice(objs), rng.random()
    url = f"/v2/app/{app}/object/{obj}"
    if roll < 0.45:
        r = api.put(url, json={"n": rng.randrange(4)})
    elif roll < 0.75:
        r = api.patch(url, json={"m": rng.randrange(3)},
                      headers={"Content-Type": "application/merge-patch+json"})
    else:
        r = api.delete(url)
    assert r.status_code in (201, 204, 404), r.text
    return obj


def test_deltas_name_every_change_the_whole_state_did_across_reconnections(
        fresh_store: ConfigStoreProcess) -> None:
    rng = random.Random(20)
    api = Api(fresh_store.url, ("admin", ADMIN_PASSWORD))
    app = make_object(api, uuids.Class.App)
    objs = [make_object(api, uuids.Class.Device) for _ in range(12)]
    client = ConfigStoreClient(fresh_store.url, "admin", ADMIN_PASSWORD, retries=5,
                               backoff=0.1)
    whole, fed = WholeStateDiff(), DeltaFed(client)
    # slow to reconnect, so writes land while the client is away
    notify = NotifyClient(client, reconnect_delay=(1.5, 2.0))
    try:
        subs = [notify.search(app, whole), notify.search(app, fed, deltas=True)]
        for round_ in range(4):
            touched = {_write(api, rng, app, objs) for _ in range(40)}
            expected = _listing(api, app)
            _settle(lambda e=expected: whole.state == e and fed.state() == e)
            named_whole, named_fed = whole.take(), fed.take()
            assert named_fed == named_whole, f"round {round_}"
            assert named_fed <= touched | set(expected)

            # away: the server restarts; writes land before the client is back, or while it
            # resumes (a full set if the server finds its app changed, else 304 and deltas)
            fresh_store.stop(signal.SIGKILL)
            _settle(lambda: not notify.connected)
            fresh_store.start()
            api = Api(fresh_store.url, ("admin", ADMIN_PASSWORD))
            before = _listing(api, app)
            away = [_write(api, rng, app, objs) for _ in range(6)]
            after = _listing(api, app)
            moved = {o for o in away if before.get(o) != after.get(o)}
            assert notify.wait_ready(45)
            _settle(lambda e=after: whole.state == e and fed.state() == e
                    and all(sub.live for sub in subs))
            named_whole, named_fed = whole.take(), fed.take()
            assert named_fed == named_whole, f"round {round_}, after reconnecting"
            # values that moved are named; an etag may also move with the same value
            assert moved <= named_fed <= set(away), f"round {round_}: {moved} {named_fed}"
    finally:
        notify.close()
        client.close()
        fresh_store.stop(signal.SIGKILL)  # nothing to save
