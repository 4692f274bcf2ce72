"""How many Edge deployments their edges report drifted (for ``/metrics``): every
deployment, a person's or a fleet deployment's, in two Config Store searches, recomputed at
most every ``ttl`` seconds (:class:`~..services.fleet.throttled_counts.ThrottledCounts`)."""

from __future__ import annotations

import time
from collections.abc import Callable

from fplus.config_store.client import ConfigStoreClient
from fplus.jsontypes import as_object, text

from ..model.apps_and_roles import EDGE_APP
from ..model.deployment_state import deployment_state
from ..model.edge_deployments import DEPLOYMENT_APP
from ..services.fleet.throttled_counts import ThrottledCounts

DRIFTED = "drifted"


class DriftCounts(ThrottledCounts):
    """``drifted()``: the Edge deployments whose HelmRelease the edge reports drifted."""

    def __init__(self, cs: ConfigStoreClient, ttl: float = 15.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cs = cs
        super().__init__(self._count, (DRIFTED,), "drifted deployments", ttl, clock)

    def drifted(self) -> int:
        return self.counts()[DRIFTED]

    def _count(self) -> dict[str, int]:
        deployments = as_object(self.cs.search(DEPLOYMENT_APP, {}, {"cluster": "cluster"}))
        edges = as_object(self.cs.search(EDGE_APP, {}, {"deployments": "deployments",
                                                        "flux": "flux"}))
        return {DRIFTED: sum(
            1 for uuid, entry in deployments.items()
            if (cluster := text(as_object(entry), "cluster")) is not None
            and deployment_state(uuid, edges.get(cluster)).drifted)}
