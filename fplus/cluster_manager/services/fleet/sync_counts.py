"""How many clusters are Synced, Progressing, Degraded or Unknown (for ``/metrics``).

One count costs two Config Store searches (the setup statuses that are ready, and the
fields of every edge report the sync rests on, never the listed objects) and one repo head
per cluster, so it is computed at most every ``ttl`` seconds and served from memory in
between. A count that cannot be made keeps the last one (logged).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from fplus.config_store.client import ConfigStoreClient

from ...model.apps_and_roles import EDGE_APP, STATUS_APP
from ...model.setup_status import DELETING, FAILED
from ...model.sync_state import STATES, UNKNOWN, derive_sync
from ..clusters.status_view import EDGE_SEARCH_FIELDS, Liveness, edge_state, searched_edge
from .repo_heads import RepoHeads
from .throttled_counts import ThrottledCounts


class FleetSync(ThrottledCounts):
    """``counts()``: commissioned clusters by sync state (every state present); recomputed
    at most every ``ttl`` s."""

    def __init__(self, cs: ConfigStoreClient, heads: RepoHeads, liveness: Liveness | None = None,
                 ttl: float = 15.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.cs, self.heads, self.liveness = cs, heads, liveness or Liveness()
        super().__init__(self._count, STATES, "clusters by sync state", ttl, clock)

    def _count(self) -> dict[str, int]:
        setups = self.cs.search(STATUS_APP, {"ready": True}, {"phase": "phase"}) or {}
        edges = self.cs.search(EDGE_APP, {}, EDGE_SEARCH_FIELDS) or {}
        now = datetime.now(UTC)
        found = dict.fromkeys(STATES, 0)
        for cluster, setup in setups.items():
            if setup.get("phase") in (FAILED, DELETING):
                found[UNKNOWN] += 1
                continue
            edge = searched_edge(edges.get(cluster))
            sync = derive_sync(self.heads.get(cluster), edge,
                               edge_state(edge, now, self.liveness))
            found[sync.state] += 1
        return found
