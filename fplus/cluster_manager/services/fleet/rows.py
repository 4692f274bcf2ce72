"""Every cluster's list row, from three Config Store searches, whatever the fleet's size.

A row needs the cluster's name and labels (its configuration entry), its recorded phase,
error and commit (its setup status) and what its edge last said (lastSeen, hosts and the
fields its sync rests on). Reading those entry by entry costs a request per cluster; here one
search per app selects only those fields, so a list of 10,000 clusters costs three requests.

Each search still makes the Config Store read every entry of its app (2-3 s for 10,000
clusters on a 2-core machine, ``bench/fleet_list.py``), so once the fleet holds
:data:`CACHE_FROM` clusters or more the rows are kept and shared by the requests that follow,
for ``ttl`` seconds or three times as long as reading them took, whichever is longer (so the
list never keeps the Config Store busy more than a third of the time); while one request
reads them again the others are answered from the rows kept. A write made through this
Cluster Manager's API drops them at once (:meth:`FleetRows.forget`). A smaller fleet is read
afresh for every request, so its list always shows the latest write.

Edge Sync writes the edge entries with the edge's credentials; one the Config Store cannot
parse is left out of its search, so its cluster is listed as if its edge had not reported
(its status route answers 502 naming the entry).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from fplus.config_store.client import ConfigStoreClient
from fplus.jsontypes import Doc, as_object, string_map, text

from ...model.apps_and_roles import CONFIG_APP, EDGE_APP, STATUS_APP
from ...model.setup_status import SetupStatus
from ...model.sync_state import Sync
from ..clusters.status_view import (
    EDGE_SEARCH_FIELDS,
    Liveness,
    cluster_sync,
    derive_phase,
    edge_text,
    host_count,
    searched_edge,
)

CACHE_FROM = 500
"""Clusters from which the rows are shared for ``ttl`` seconds rather than read per request."""
_CONFIG_FIELDS = {"name": "name", "labels": "labels"}
_STATUS_FIELDS = {"phase": "phase", "ready": "ready", "name": "spec.name",
                  "refusedName": "refused.spec.name", "error": "error", "commit": "commit"}
_EDGE_FIELDS = {**EDGE_SEARCH_FIELDS, "hosts": "hosts"}


@dataclass(frozen=True)
class FleetRow:
    """One cluster as the list shows it (its sync is derived on demand: it needs the repo's
    head)."""

    uuid: str
    name: str | None
    phase: str
    setup: SetupStatus
    edge: Doc | None
    labels: dict[str, str]

    @property
    def error(self) -> str | None:
        """Why the cluster is Failed (or its last attempt failed), if it is."""
        return self.setup.error

    def sync(self, head: str | None, now: datetime, liveness: Liveness) -> Sync:
        """The cluster's sync against its repo's ``head``."""
        return cluster_sync(self.setup, self.edge, head, now, liveness)

    def view(self, sync_state: str) -> dict[str, object]:
        """The row as ``GET /v1/cluster`` answers it."""
        row: dict[str, object] = {"uuid": self.uuid, "name": self.name, "phase": self.phase,
               "syncState": sync_state, "lastSeen": edge_text(self.edge, "lastSeen"),
               "hosts": host_count(self.edge), "commit": self.setup.commit,
               "labels": self.labels}
        if self.error is not None:
            row["error"] = self.error
        return row


def _setup(picked: Doc | None) -> SetupStatus:
    """A setup status rebuilt from the searched fields (empty: none recorded yet)."""
    if picked is None:
        return SetupStatus({})
    entry: dict[str, object] = {k: picked[k] for k in ("phase", "ready", "error", "commit")
                             if k in picked}
    entry["spec"] = {"name": picked["name"]} if "name" in picked else {}
    if "refusedName" in picked:
        entry["refused"] = {"spec": {"name": picked["refusedName"]}}
    return SetupStatus(entry)


def build_rows(configs: Doc, statuses: Doc, edges: Doc,
               now: datetime, liveness: Liveness) -> list[FleetRow]:
    """The rows of every cluster with a configuration entry or a setup status."""
    rows = []
    for cluster in configs.keys() | statuses.keys():
        config = as_object(configs.get(cluster))
        picked = statuses.get(cluster)
        setup = _setup(as_object(picked) if picked is not None else None)
        name = setup.name or setup.refused_name or text(config, "name")
        edge = searched_edge(as_object(edges.get(cluster))) if setup.exists else None
        rows.append(FleetRow(cluster, name, derive_phase(setup, edge, now, liveness), setup,
                             edge, string_map(config.get("labels"))))
    return rows


class FleetRows:
    """``rows()``: every cluster's row (see the module docstring for when they are shared)."""

    def __init__(self, cs: ConfigStoreClient, liveness: Liveness | None = None,
                 ttl: float = 2.0, cache_from: int = CACHE_FROM,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cs, self.liveness = cs, liveness or Liveness()
        self.ttl, self.cache_from, self._clock = ttl, cache_from, clock
        self._lock = threading.Lock()
        self._kept: tuple[float, list[FleetRow]] | None = None
        self._reading = False
        self._writes = 0  # forget() counts; rows read across a write are not kept

    def rows(self) -> list[FleetRow]:
        """The rows: shared while fresh enough, and while another request reads them again;
        else read now."""
        with self._lock:
            kept = self._kept
            if kept is not None and (self._clock() < kept[0] or self._reading):
                return kept[1]
            self._reading = kept is not None
            writes = self._writes
        try:
            started = self._clock()
            rows = self.read()
            took = self._clock() - started
        finally:
            with self._lock:
                self._reading = False
        with self._lock:  # shared for ttl, or three times the read (the store's load bounded)
            self._kept = ((self._clock() + max(self.ttl, 3 * took), rows)
                          if len(rows) >= self.cache_from and writes == self._writes
                          else None)
        return rows

    def read(self) -> list[FleetRow]:
        """The rows, read now: three searches."""
        configs = self.cs.search(CONFIG_APP, {}, _CONFIG_FIELDS) or {}
        statuses = self.cs.search(STATUS_APP, {}, _STATUS_FIELDS) or {}
        edges = self.cs.search(EDGE_APP, {}, _EDGE_FIELDS) or {}
        return build_rows(configs, statuses, edges, datetime.now(UTC), self.liveness)

    def forget(self) -> None:
        """Drop the shared rows: the next list reads afresh (after a write)."""
        with self._lock:
            self._kept = None
            self._writes += 1
