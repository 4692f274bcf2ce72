"""The leader's fleet loop: follow the fleet deployments, the cluster configurations, the
Edge deployments, the rollout statuses and the edges' reports over notify/v2, and apply
:func:`~..model.fleet_expansion.expand`'s plan (rollout statuses included: this loop is
their only writer, so a new leader resumes a rollout where the last one left it).

Each input is a SEARCH followed as deltas into a :class:`SearchMirror`, so an update costs
what it changed, not the size of the app (10,000 clusters' heartbeats stay cheap). A change
marks the state dirty and one worker thread makes a pass over a copy of the mirrors (plan,
then writes and removals through :mod:`..model.edge_deployments`), so passes never overlap.
The edges' reports and the setup statuses (:data:`FOLLOWED_WHILE_ROLLING`) matter only to a
rollout that is progressing: while none is, a change of theirs is kept but causes no pass.
The loop's own writes come back with the etags it already holds and cause none either.
Nothing is written until all inputs are known: an app the Config Store refuses to show
counts as unknown, not empty, so losing read access never removes a deployment. A failed
pass is retried after ``retry`` seconds; a resync every ``resync`` seconds repairs anything
missed. :meth:`start` and :meth:`stop` follow the leadership.

A subclass follows more inputs (:attr:`FleetLoop.inputs`) and does more in each pass
(:meth:`FleetLoop.make_pass`): :mod:`.cluster_rollouts` paces cluster rollouts on the same
subscriptions, snapshot and worker. The rollout statuses of both live in one app; a fleet
pass leaves those marked ``kind: cluster`` alone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from fplus.config_store.client import (
    ConfigStoreClient,
    ConfigStoreError,
    NotifyClient,
    SearchDelta,
    SearchMirror,
)

from ..model import edge_deployments
from ..model.apps_and_roles import CONFIG_APP, EDGE_APP
from ..model.cluster_rollouts import KIND as CLUSTER_KIND
from ..model.fleet_deployments import FLEET_APP
from ..model.fleet_expansion import Plan, expand
from ..model.rollout import PROGRESSING, ROLLOUT_APP

log = logging.getLogger(__name__)
T = TypeVar("T")

INPUTS = {"fleets": FLEET_APP, "configs": CONFIG_APP,
          "deployments": edge_deployments.DEPLOYMENT_APP, "rollouts": ROLLOUT_APP,
          "edges": EDGE_APP}
WRITERS = 8
"""Deployment writes (and removals) a pass makes at once: each is a few Config Store requests
on entries of its own, so a pass of thousands waits on round trips, not on each other."""
FOLLOWED_WHILE_ROLLING = frozenset({"edges", "setups"})
"""Inputs whose changes cause a pass only while a rollout is progressing."""


def _notify_client(cs: Any) -> NotifyClient:
    return NotifyClient(cs, reconnect_delay=(1.0, 3.0))


class FleetLoop:
    """Keeps every fleet deployment expanded while this replica leads."""

    inputs: dict[str, str] = INPUTS
    """What the loop follows: input name -> app (a SEARCH of each)."""

    def __init__(self, cs: ConfigStoreClient, *,
                 notify: Callable[[Any], Any] = _notify_client, resync: float = 60.0,
                 retry: float = 5.0, settle: float = 0.2, writers: int = WRITERS) -> None:
        self.cs, self._make_notify = cs, notify
        self.resync, self.retry, self.settle = resync, retry, settle
        self.writers = writers
        self._lock = threading.Lock()
        self._mirrors = {key: SearchMirror() for key in self.inputs}
        self._known: set[str] = set()
        """Inputs with a full set delivered and not refused since."""
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._notify: Any = None
        self._subs: dict[str, Any] = {}
        self._thread: threading.Thread | None = None
        self.passes = 0
        """Passes made (for tests and logs)."""

    def start(self) -> None:
        """Subscribe and start the worker (again after :meth:`stop`: afresh)."""
        with self._lock:
            if self._thread is not None:
                return
            self._mirrors = {key: SearchMirror() for key in self.inputs}
            self._known = set()
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, args=(self._stop,),
                                            name="fleet", daemon=True)
        self._notify = self._make_notify(self.cs)
        with self._lock:  # callbacks wait until the handles are stored
            for key, app in self.inputs.items():
                self._subs[key] = self._notify.search(app, self._callback(key), deltas=True)
        self._thread.start()

    def stop(self) -> None:
        """Unsubscribe and stop the worker (a pass under way finishes its current write)."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._stop.set()
        self._dirty.set()
        if self._notify is not None:
            self._notify.close()
            self._notify = None
        self._subs = {}
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10.0)

    def _callback(self, key: str) -> Callable[[SearchDelta], None]:
        def update(delta: SearchDelta) -> None:
            with self._lock:
                mirror = self._mirrors[key]
                changed = mirror.apply(delta)
                if delta.refused:  # no access, not no entries
                    self._known.discard(key)
                elif delta.full:
                    self._known.add(key)
                # unreadable: entries that exist but cannot be served now
                unknown = key not in self._known or bool(mirror.unreadable)
                wanted = (delta.full or delta.refused or unknown
                          or (changed and (key not in FOLLOWED_WHILE_ROLLING
                                           or self._rolling())))
            if unknown:
                log.warning("fleet: the Config Store does not show every entry of %s (%s); "
                            "changing nothing until it does", key, self.inputs[key])
            if wanted:
                self._dirty.set()
        return update

    def _rolling(self) -> bool:
        """Some rollout is progressing (under the lock)."""
        return any(isinstance(status, dict) and status.get("state") == PROGRESSING
                   for status in self._mirrors["rollouts"].children.values())

    def snapshot(self) -> tuple[dict[str, Any], dict[str, str]] | None:
        """A copy of the inputs and the deployments' etags, or None while any is unknown."""
        with self._lock:
            if self._known != set(self.inputs) or any(m.unreadable
                                                      for m in self._mirrors.values()):
                return None
            inputs = {key: dict(mirror.children) for key, mirror in self._mirrors.items()}
            return inputs, self._etags_of("deployments")

    def entry_etags(self, key: str) -> dict[str, str]:
        """The etags of input ``key``'s entries as last delivered or written."""
        with self._lock:
            return self._etags_of(key)

    def _etags_of(self, key: str) -> dict[str, str]:
        return {k: v for k, v in self._mirrors[key].etags.items() if v}

    def _run(self, stop: threading.Event) -> None:
        wait = self.resync
        while not stop.is_set():
            self._dirty.wait(wait)
            if stop.is_set():
                return
            stop.wait(self.settle)  # let related changes arrive together
            self._dirty.clear()
            found = self.snapshot()
            if found is None:
                wait = self.resync
                continue
            ok, wake_in = self.make_pass(*found, stop)
            self.passes += 1
            wait = self.resync if ok else self.retry
            if wake_in is not None:  # a rollout's pause ends: look again then
                wait = min(wait, wake_in + 0.1)

    def make_pass(self, inputs: dict[str, Any], etags: dict[str, str],
                  stop: threading.Event) -> tuple[bool, float | None]:
        """One pass: plan and apply; ``(ok, seconds until a rollout's pause ends)``."""
        fleet_statuses = {k: v for k, v in inputs["rollouts"].items()
                          if not (isinstance(v, dict) and v.get("kind") == CLUSTER_KIND)}
        plan = expand(inputs["fleets"], inputs["configs"], inputs["deployments"],
                      rollouts=fleet_statuses, edges=inputs["edges"])
        return self.apply(plan, etags, stop), plan.wake_in

    def apply(self, plan: Plan, etags: dict[str, str] | None = None,
              stop: threading.Event | None = None) -> bool:
        """Make the plan's writes, then its removals, each ``writers`` at a time (they touch
        different entries); False if any failed (the rest are made)."""
        def write(item: tuple[edge_deployments.Deployment, bool]) -> bool:
            deployment, new = item
            try:
                edge_deployments.write(self.cs, deployment, new=new,
                                       if_match=None if new else (etags or {}).get(deployment.uuid))
            except ConfigStoreError as exc:
                log.warning("fleet deployment %s: cannot write deployment %s on cluster %s: "
                            "%s", deployment.fleet, deployment.uuid, deployment.cluster, exc)
                return False
            log.info("fleet deployment %s: %s deployment %s on cluster %s", deployment.fleet,
                     "created" if new else "updated", deployment.uuid, deployment.cluster)
            return True

        def remove(uuid: str) -> bool:
            try:
                edge_deployments.remove(self.cs, uuid)
            except ConfigStoreError as exc:
                log.warning("fleet: cannot remove deployment %s: %s", uuid, exc)
                return False
            log.info("fleet: removed deployment %s (its cluster no longer matches, or its "
                     "fleet deployment is gone)", uuid)
            return True

        ok = self._each(write, plan.writes, stop)
        ok = self._each(remove, plan.removals, stop) and ok
        ok = self._apply_rollouts(plan, stop) and ok
        for fleet, conflicts in plan.conflicts.items():
            for cluster, why in conflicts.items():
                log.debug("fleet deployment %s on cluster %s: %s", fleet, cluster, why)
        return ok

    def _each(self, work: Callable[[T], bool], items: Sequence[T],
              stop: threading.Event | None) -> bool:
        """``work`` on every item, ``writers`` at a time, until ``stop``; all succeeded?"""
        def guarded(item: T) -> bool:
            return True if stop is not None and stop.is_set() else work(item)

        if len(items) <= 1 or self.writers <= 1:
            return all([guarded(item) for item in items])
        with ThreadPoolExecutor(min(self.writers, len(items)),
                                thread_name_prefix="fleet-write") as pool:
            return all(list(pool.map(guarded, items)))

    def _apply_rollouts(self, plan: Plan, stop: threading.Event | None) -> bool:
        """Write the rollouts' new statuses and remove those of fleet deployments gone."""
        ok = True
        for fleet, status in plan.rollouts.items():
            if stop is not None and stop.is_set():
                return ok
            try:
                self.cs.put_config(ROLLOUT_APP, fleet, status)
                self.seen(fleet, status)
                log.info("fleet deployment %s: rollout %s %s at step %d", fleet,
                         status.get("rolloutId"), status.get("state"), status.get("step", 0) + 1)
            except ConfigStoreError as exc:
                ok = False
                log.warning("fleet deployment %s: cannot write its rollout status: %s",
                            fleet, exc)
        for fleet in plan.rollout_removals:
            try:
                self.cs.delete_config(ROLLOUT_APP, fleet)
                self.seen(fleet, None)
            except ConfigStoreError as exc:
                ok = False
                log.warning("fleet deployment %s: cannot remove its rollout status: %s",
                            fleet, exc)
        return ok

    def seen(self, fleet: str, status: dict[str, Any] | None) -> None:
        """Take a status written (None: removed) as read, so the next pass does not begin a
        rollout again from the status before it while the notify/v2 update is on its way."""
        self.seen_entry("rollouts", fleet, status)

    def seen_entry(self, key: str, uuid: str, value: Any, etag: str | None = None) -> None:
        """Take an entry of input ``key`` written by this loop (None: removed) as read, with
        its new ``etag`` if known, until the notify/v2 update brings it."""
        with self._lock:
            if key not in self._known:
                return
            mirror = self._mirrors[key]
            if value is None:
                mirror.children.pop(uuid, None)
                mirror.etags.pop(uuid, None)
                return
            mirror.children[uuid] = value
            if etag:
                mirror.etags[uuid] = etag
            else:
                mirror.etags.pop(uuid, None)
