"""The reconcile loop: Edge cluster configuration entries in, commissioned clusters out.

A notify SEARCH follows every configuration entry; each changed, new or removed entry
queues its cluster. A change of the Flux template re-renders every cluster. At start,
setup status entries without a configuration entry are queued for decommissioning.
"""

from __future__ import annotations

import copy
import logging
import threading
from typing import Any

from config_store import uuids
from config_store.client import ConfigStoreClient, NotifyClient, SearchState

from .commission import STATUS, Commissioner
from .metrics import Metrics
from .workqueue import KeyedWorkQueue

log = logging.getLogger(__name__)
CONFIG = uuids.App.EdgeClusterConfiguration


class Reconciler:
    """Keeps every cluster at its configured state."""

    def __init__(self, cs: ConfigStoreClient, commissioner: Commissioner, workers: int = 8,
                 backoff_initial: float = 2.0, backoff_max: float = 300.0,
                 metrics: Metrics | None = None) -> None:
        self.cs, self.commissioner = cs, commissioner
        self.metrics = metrics or Metrics()
        self.queue = KeyedWorkQueue(self._timed_handle, workers, backoff_initial, backoff_max)
        self.metrics.track_queue(self.queue.depth)
        self._lock = threading.Lock()
        self._desired: SearchState | None = None
        self._force: set[str] = set()
        self._template_seen = False
        self._flux_template: Any = None
        self._notify: NotifyClient | None = None
        self.ready = threading.Event()

    def start(self) -> None:
        """Subscribe and start the workers."""
        self.queue.start()
        self._notify = NotifyClient(self.cs, reconnect_delay=(1.0, 3.0))
        self._notify.search(CONFIG, self._on_configs)
        self._notify.watch(uuids.App.FluxTemplate, uuids.App.FluxTemplate, self._on_template)

    def stop(self) -> None:
        """Unsubscribe and stop the workers."""
        if self._notify is not None:
            self._notify.close()
        self.queue.stop()

    def _on_configs(self, state: SearchState) -> None:
        with self._lock:
            previous, self._desired = self._desired, state
        if previous is None:
            known = set(self.cs.list_app_objects(STATUS))
            changed = set(state) | (known - set(state))
            self.ready.set()
        else:
            changed = _changed(state, previous)
        for cluster in changed:
            self.queue.submit(cluster)

    def _on_template(self, template: Any) -> None:
        self._flux_template = template
        if not self._template_seen:
            self._template_seen = True
            return
        with self._lock:
            clusters = list(self._desired or {})
            self._force.update(clusters)
        log.info("Flux template changed: re-rendering %d clusters", len(clusters))
        for cluster in clusters:
            self.queue.submit(cluster)

    def _timed_handle(self, cluster: str) -> None:
        with self.metrics.reconcile():
            self._handle(cluster)

    def _handle(self, cluster: str) -> None:
        with self._lock:
            desired = self._desired or SearchState({}, {})
            force = cluster in self._force
            self._force.discard(cluster)
        if cluster not in desired:
            self.commissioner.delete(cluster)
            return
        # the entry and its etag as the newest notification had them (a later change
        # queues the cluster again); fetched only if the update carried no etag
        config, etag = copy.deepcopy(desired[cluster]), desired.etags.get(cluster)
        if etag is None:
            config, etag = self.cs.get_config_with_etag(CONFIG, cluster)
            if config is None:  # deleted since the notification; the next one will say so
                return
        name = config.get("name") if isinstance(config, dict) else None
        same_name = tuple(k for k, v in desired.items()
                          if k != cluster and isinstance(v, dict) and v.get("name") == name)
        try:
            self.commissioner.update(cluster, config, etag, force=force, same_name=same_name,
                                     flux_template=self._flux_template)
        except Exception:
            if force:
                with self._lock:
                    self._force.add(cluster)
            raise


def _changed(state: SearchState, previous: SearchState) -> set[str]:
    """Clusters whose entry appeared, went, or changed (by etag; by value without one)."""
    return {k for k in state.keys() | previous.keys()
            if k not in state or k not in previous
            or state.etags.get(k) != previous.etags.get(k)
            or (state.etags.get(k) is None and state[k] != previous[k])}
