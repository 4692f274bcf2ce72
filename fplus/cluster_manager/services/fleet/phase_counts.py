"""How many clusters are in each phase, and how many edges are late (for ``/metrics``).

The phase is the status view's (:func:`..clusters.status_view.derive_phase`): one count costs three
Config Store reads (the configuration entries' uuids, the setup statuses' ``phase`` and
``ready``, the edges' ``lastSeen``), so it is computed at most every ``ttl`` seconds and
served from memory in between. A count that cannot be made keeps the last one (logged).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from fplus.config_store.client import ConfigStoreClient

from ...model.apps_and_roles import CONFIG_APP, EDGE_APP, STATUS_APP
from ...model.setup_status import SetupStatus
from ..clusters.status_view import Liveness, derive_phase
from .throttled_counts import ThrottledCounts

PHASES = ("Pending", "Provisioning", "Ready", "Online", "Stale", "Offline", "Failed",
          "Deleting")
"""Every phase a cluster can be in (each is reported, 0 included)."""
LATE = ("Stale", "Offline")
"""The phases of an edge whose last heartbeat is older than :attr:`Liveness.stale_after`."""


class FleetPhases(ThrottledCounts):
    """``counts()``: clusters by phase (every phase present); recomputed at most every
    ``ttl`` s."""

    def __init__(self, cs: ConfigStoreClient, liveness: Liveness | None = None,
                 ttl: float = 15.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.cs, self.liveness = cs, liveness or Liveness()
        super().__init__(self._count, PHASES, "clusters by phase", ttl, clock)

    def late_edges(self) -> int:
        """Edges whose last heartbeat is older than the stale threshold (Stale or
        Offline), from the same counts."""
        counts = self.counts()
        return sum(counts[phase] for phase in LATE)

    def _count(self) -> dict[str, int]:
        configs = set(self.cs.list_app_objects(CONFIG_APP))
        setups = self.cs.search(STATUS_APP, {}, {"phase": "phase", "ready": "ready"}) or {}
        edges = self.cs.search(EDGE_APP, {}, {"lastSeen": "lastSeen"}) or {}
        now = datetime.now(UTC)
        found = dict.fromkeys(PHASES, 0)
        for cluster in configs | set(setups):
            picked = setups.get(cluster)
            setup = SetupStatus.parse({"phase": "Pending", **picked} if isinstance(
                picked, dict) else None)
            edge = edges.get(cluster)
            phase = derive_phase(setup, edge if isinstance(edge, dict) else None, now,
                                 self.liveness)
            found[phase] = found.get(phase, 0) + 1
        return found


__all__ = ["LATE", "PHASES", "FleetPhases"]
