"""The leader's fleet loop: follow the fleet deployments, the cluster configurations, the
Edge deployments, the rollout statuses and the edges' reports over notify/v2, and apply
:func:`~..model.fleet_expansion.expand`'s plan (rollout statuses included: this loop is
their only writer, so a new leader resumes a rollout where the last one left it).

Each input is a SEARCH; every change marks the state dirty and one worker thread makes a
pass (plan, then writes and removals through :mod:`..model.edge_deployments`), so passes
never overlap. The loop's own writes come back as changes, and the pass they cause finds
nothing to do. Nothing is written until all inputs are known: an app the Config Store
refuses to show counts as unknown, not empty, so losing read access never removes a
deployment. A failed pass is retried after ``retry`` seconds; a resync every ``resync``
seconds repairs anything missed. :meth:`start` and :meth:`stop` follow the leadership.

A subclass follows more inputs (:attr:`FleetLoop.inputs`) and does more in each pass
(:meth:`FleetLoop.make_pass`): :mod:`.cluster_rollouts` paces cluster rollouts on the same
subscriptions, snapshot and worker. The rollout statuses of both live in one app; a fleet
pass leaves those marked ``kind: cluster`` alone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from fplus.config_store.client import ConfigStoreClient, ConfigStoreError, NotifyClient

from ..model import edge_deployments
from ..model.apps_and_roles import CONFIG_APP, EDGE_APP
from ..model.cluster_rollouts import KIND as CLUSTER_KIND
from ..model.fleet_deployments import FLEET_APP
from ..model.fleet_expansion import Plan, expand
from ..model.rollout import ROLLOUT_APP

log = logging.getLogger(__name__)

INPUTS = {"fleets": FLEET_APP, "configs": CONFIG_APP,
          "deployments": edge_deployments.DEPLOYMENT_APP, "rollouts": ROLLOUT_APP,
          "edges": EDGE_APP}


def _notify_client(cs: Any) -> NotifyClient:
    return NotifyClient(cs, reconnect_delay=(1.0, 3.0))


class FleetLoop:
    """Keeps every fleet deployment expanded while this replica leads."""

    inputs: dict[str, str] = INPUTS
    """What the loop follows: input name -> app (a SEARCH of each)."""

    def __init__(self, cs: ConfigStoreClient, *,
                 notify: Callable[[Any], Any] = _notify_client, resync: float = 60.0,
                 retry: float = 5.0, settle: float = 0.2) -> None:
        self.cs, self._make_notify = cs, notify
        self.resync, self.retry, self.settle = resync, retry, settle
        self._lock = threading.Lock()
        self._inputs: dict[str, Any] = dict.fromkeys(self.inputs)
        self._etags: dict[str, str] = {}
        self._entry_etags: dict[str, dict[str, str]] = {}
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
            self._inputs = dict.fromkeys(self.inputs)
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, args=(self._stop,),
                                            name="fleet", daemon=True)
        self._notify = self._make_notify(self.cs)
        with self._lock:  # callbacks wait until the handles are stored
            for key, app in self.inputs.items():
                self._subs[key] = self._notify.search(app, self._callback(key))
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

    def _callback(self, key: str) -> Callable[[Any], None]:
        def update(children: Any) -> None:
            with self._lock:
                sub = self._subs.get(key)
                # refused: no access, not no entries; unreadable: entries that exist
                unknown = bool((sub is not None and sub.refused)
                               or getattr(children, "unreadable", None))
                self._inputs[key] = None if unknown else dict(children)
                if not unknown:
                    self._entry_etags[key] = {
                        k: v for k, v in getattr(children, "etags", {}).items() if v}
                    if key == "deployments":
                        self._etags = self._entry_etags[key]
            if unknown:
                log.warning("fleet: the Config Store does not show every entry of %s (%s); "
                            "changing nothing until it does", key, self.inputs[key])
            self._dirty.set()
        return update

    def snapshot(self) -> tuple[dict[str, Any], dict[str, str]] | None:
        """The inputs and the deployments' etags, or None while any is unknown."""
        with self._lock:
            if any(value is None for value in self._inputs.values()):
                return None
            return dict(self._inputs), dict(self._etags)

    def entry_etags(self, key: str) -> dict[str, str]:
        """The etags of input ``key``'s entries as last delivered."""
        with self._lock:
            return dict(self._entry_etags.get(key) or {})

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
        """Make the plan's writes and removals; False if any failed (the rest are made)."""
        ok = True
        for deployment, new in plan.writes:
            if stop is not None and stop.is_set():
                return ok
            try:
                edge_deployments.write(self.cs, deployment, new=new,
                                       if_match=None if new else (etags or {}).get(deployment.uuid))
                log.info("fleet deployment %s: %s deployment %s on cluster %s",
                         deployment.fleet, "created" if new else "updated", deployment.uuid,
                         deployment.cluster)
            except ConfigStoreError as exc:
                ok = False
                log.warning("fleet deployment %s: cannot write deployment %s on cluster %s: "
                            "%s", deployment.fleet, deployment.uuid, deployment.cluster, exc)
        for uuid in plan.removals:
            if stop is not None and stop.is_set():
                return ok
            try:
                edge_deployments.remove(self.cs, uuid)
                log.info("fleet: removed deployment %s (its cluster no longer matches, or its "
                         "fleet deployment is gone)", uuid)
            except ConfigStoreError as exc:
                ok = False
                log.warning("fleet: cannot remove deployment %s: %s", uuid, exc)
        ok = self._apply_rollouts(plan, stop) and ok
        for fleet, conflicts in plan.conflicts.items():
            for cluster, why in conflicts.items():
                log.debug("fleet deployment %s on cluster %s: %s", fleet, cluster, why)
        return ok

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
            known = self._inputs.get(key)
            if known is None:
                return
            etags = self._entry_etags.setdefault(key, {})
            if value is None:
                known.pop(uuid, None)
                etags.pop(uuid, None)
                return
            known[uuid] = value
            if etag:
                etags[uuid] = etag
            else:
                etags.pop(uuid, None)
