"""The reconcile loop: notify subscriptions in, one :func:`~.commissioning.reconcile` per
changed cluster out.

A notify SEARCH follows every configuration entry, as deltas: each changed, new or removed
entry queues its cluster, at a cost independent of the number of clusters (a full set, at
each (re)connection, is compared with what is known). Another follows the Flux template
app: a change of the default template re-renders every cluster not pinned to another, a
change of a named one the clusters pinned to it (``fluxTemplate``). At start, setup status
entries without a configuration entry are queued for decommissioning, and the shared Helm
charts repo gets its first commit if it has none (:mod:`.shared_repos`).

:meth:`Reconciler.health` says whether the reconciler follows the Config Store: synced once
the first full set of entries arrived, and only while every subscription is live (a SEARCH the
Config Store keeps closing, refuses or never answers is reported with its reason).

Only a leader reconciles (:mod:`fplus.cluster_manager.leader`): :meth:`Reconciler.stop` and
:meth:`Reconciler.start` may alternate any number of times. Each start begins afresh (new
subscriptions, a new queue, everything known forgotten), so a replica that leads again
looks at every cluster as at its first start.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol, cast

from fplus.config_store.client import ConfigStoreClient, NotifyClient, SearchDelta

from ..metrics import Metrics
from ..model.apps_and_roles import CONFIG_APP, REQUEST_APP, STATUS_APP
from .commissioning import Env, reconcile
from .configdb import ConfigDB
from .desired_state import TEMPLATE_APP
from .workqueue import KeyedWorkQueue, RequeueAfter

log = logging.getLogger(__name__)

class Subscriber(Protocol):
    """What the loop needs of a notify client (met by ``NotifyClient``)."""

    def search(self, app: str, callback: Callable[[SearchDelta], None], *,
               deltas: bool) -> object:
        """Follow ``app``'s entries; the subscription (its ``problem`` says how it fares)."""

    def close(self) -> None:
        """End every subscription."""


NotifyFactory = Callable[[ConfigDB], Subscriber]
"""Makes the notify client for a Config Store client (``NotifyClient`` by default)."""


def _notify_client(cs: ConfigDB) -> NotifyClient:
    # the service passes the HTTP client; fakes bring a factory of their own
    return NotifyClient(cast(ConfigStoreClient, cs), reconnect_delay=(1.0, 3.0))


class Reconciler:
    """Keeps every cluster at its configured state."""

    def __init__(self, env: Env, workers: int = 8, backoff_initial: float = 2.0,
                 backoff_max: float = 300.0, metrics: Metrics | None = None,
                 notify: NotifyFactory = _notify_client, drain_timeout: float = 10.0,
                 on_lead: Callable[[threading.Event], object] | None = None) -> None:
        """``on_lead(stopping)`` runs in a thread of its own at every start (the shared repos'
        set-up, :mod:`.shared_repos`); ``stopping`` is set when this leadership ends."""
        self.env = env
        self._on_lead = on_lead
        self.metrics = metrics or Metrics()
        self._queue_args = (workers, backoff_initial, backoff_max)
        self.queue = self._new_queue()
        self._make_notify = notify
        self.drain_timeout = drain_timeout
        self._lock = threading.Lock()
        self._running = False
        self._force: set[str] = set()
        self._notify: Subscriber | None = None
        self._stopping = threading.Event()
        self._subs: dict[str, object] = {}
        self.ready = threading.Event()
        """Set once the first full set of configuration entries has been queued."""

    def _new_queue(self) -> KeyedWorkQueue:
        queue = KeyedWorkQueue(self._handle, *self._queue_args)
        self.metrics.track_queue(queue.depth)
        return queue

    def start(self) -> None:
        """Subscribe and start the workers (again after :meth:`stop`: afresh)."""
        with self._lock:
            if self._running:
                return
            self._running = True
            restart = self.queue.started
            self._force.clear()
        if restart:
            self.queue = self._new_queue()
            self.env.desired.forget()
            self.ready.clear()
        self.queue.start()
        self._stopping = threading.Event()
        if self._on_lead is not None:
            threading.Thread(target=self._on_lead, args=(self._stopping,), name="on-lead",
                             daemon=True).start()
        self._notify = notify = self._make_notify(self.env.cs)
        self._subs["cluster configurations"] = notify.search(CONFIG_APP, self.on_configs,
                                                             deltas=True)
        self._subs["Flux templates"] = notify.search(TEMPLATE_APP, self.on_templates,
                                                     deltas=True)
        self._subs["cluster API requests"] = notify.search(REQUEST_APP, self.on_requests,
                                                           deltas=True)

    @property
    def running(self) -> bool:
        """Started and not stopped since."""
        return self._running

    def health(self) -> tuple[bool, str | None]:
        """``(synced, reason)``: synced after the first full set of configuration entries and
        while every subscription follows the Config Store; else the reason, in words."""
        if not self.ready.is_set():
            return False, "waiting for the first set of cluster configuration entries"
        for name, sub in self._subs.items():
            problem = getattr(sub, "problem", None)
            if problem:
                return False, f"notify subscription to the {name} is failing: {problem}"
        return True, None

    def stop(self) -> None:
        """Unsubscribe and stop the workers; wait up to ``drain_timeout`` seconds for the
        clusters being reconciled (the rest is left to whoever reconciles next)."""
        with self._lock:
            if not self._running:
                return
            self._running = False
        self._stopping.set()
        if self._notify is not None:
            self._notify.close()
            self._notify = None
        self._subs.clear()
        self.queue.stop(wait=self.drain_timeout)

    def on_configs(self, delta: SearchDelta) -> None:
        """A change of the configuration entries: queue every cluster it changed (at the
        first full set, every configured cluster and every leftover setup status)."""
        if delta.refused:  # empty for want of access, not of clusters
            log.warning("the Config Store refuses to show the cluster configurations; keeping "
                        "every cluster as it was until it does")
            return
        first = delta.full and not self.env.desired.known
        changed = self.env.desired.apply_configs(delta)
        if first:
            changed |= set(self.env.cs.list_app_objects(STATUS_APP))
            self.ready.set()
        if delta.unreadable:  # an entry the Config Store cannot serve is not a deleted cluster
            log.warning("the Config Store cannot serve the configuration of %s; leaving "
                        "them as they are", ", ".join(sorted(delta.unreadable)))
            changed -= delta.unreadable
        for cluster in changed:
            self.queue.submit(cluster)

    def on_requests(self, delta: SearchDelta) -> None:
        """A change of the cluster API's requests (redeploy, forced delete): queue the
        clusters concerned."""
        for cluster in self.env.desired.apply_requests(delta):
            self.queue.submit(cluster)

    def on_templates(self, delta: SearchDelta) -> None:
        """A change of the Flux templates: re-render the clusters that use a changed one."""
        clusters: set[str] = set()
        for template in self.env.desired.apply_templates(delta):
            clusters |= self.env.desired.pinned(template)
        if not clusters:
            return
        with self._lock:
            self._force.update(clusters)
        log.info("Flux template changed: re-rendering %d clusters", len(clusters))
        for cluster in clusters:
            self.queue.submit(cluster)

    def _handle(self, cluster: str) -> None:
        with self._lock:
            force = cluster in self._force
            self._force.discard(cluster)
        waiting: RequeueAfter | None = None
        try:
            with self.metrics.reconcile():
                try:
                    reconcile(cluster, self.env, force=force)
                except RequeueAfter as wait:  # waiting is no failure
                    waiting = wait
        except Exception:
            if force:  # the retry must still re-render
                with self._lock:
                    self._force.add(cluster)
            raise
        if waiting is not None:
            raise waiting

