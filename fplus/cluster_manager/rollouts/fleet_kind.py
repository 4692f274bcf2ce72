"""The fleet deployment kind: every fleet deployment expanded into Edge deployments
(:func:`.fleet_expansion.expand`), its rollout paced, its state written (those marked
``kind: cluster`` are the other kind's and left alone).

A pass writes the deployments (new or changed), then removes those no longer wanted, each
several at a time (they touch different entries), then writes the rollouts' new states
and removes those of fleet deployments gone. A failed write fails the pass; the rest are
made.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from datetime import UTC, datetime

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreError

from ..model import edge_deployments
from ..model.apps_and_roles import CONFIG_APP, EDGE_APP
from .cluster_entry import KIND as CLUSTER_KIND
from .fleet_entry import FLEET_APP
from .fleet_expansion import Plan, expand
from .gates_input import DEFAULT_STALE_AFTER, GateInputs
from .kind import LoopIO, Pass, Snapshot
from .windows import parse_windows

log = logging.getLogger(__name__)


class FleetKind:
    """Fleet deployments and their rollouts."""

    name = "fleet deployment"
    inputs: Mapping[str, str] = {"fleets": FLEET_APP, "configs": CONFIG_APP,
                                 "deployments": edge_deployments.DEPLOYMENT_APP,
                                 "edges": EDGE_APP, "windows": uuids.App.MaintenanceWindow}
    followed_while_rolling = frozenset({"edges", "windows"})

    def __init__(self, stale_after: float = DEFAULT_STALE_AFTER) -> None:
        self.stale_after = stale_after

    def make_pass(self, snapshot: Snapshot, io: LoopIO, stop: threading.Event) -> Pass:
        inputs = snapshot.inputs
        statuses = {k: v for k, v in inputs["rollouts"].items()
                    if not (isinstance(v, dict) and v.get("kind") == CLUSTER_KIND)}
        now = datetime.now(UTC)
        plan = expand(inputs["fleets"], inputs["configs"], inputs["deployments"],
                      rollouts=statuses, edges=inputs["edges"], now=now,
                      gate_inputs=GateInputs(now, self.stale_after,
                                             parse_windows(inputs["windows"])))
        return Pass(self.apply(plan, io, snapshot.etags.get("deployments"), stop),
                    plan.wake_in)

    def apply(self, plan: Plan, io: LoopIO, etags: dict[str, str] | None = None,
              stop: threading.Event | None = None) -> bool:
        """Make the plan's writes, then its removals, then its rollouts' states; False if
        any failed (the rest are made)."""
        def write(item: tuple[edge_deployments.Deployment, bool]) -> bool:
            deployment, new = item
            try:
                edge_deployments.write(io.cs, deployment, new=new,
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
                edge_deployments.remove(io.cs, uuid)
            except ConfigStoreError as exc:
                log.warning("fleet: cannot remove deployment %s: %s", uuid, exc)
                return False
            log.info("fleet: removed deployment %s (its cluster no longer matches, or its "
                     "fleet deployment is gone)", uuid)
            return True

        ok = io.each(write, plan.writes, stop)
        ok = io.each(remove, plan.removals, stop) and ok
        ok = self._write_states(plan, io, stop) and ok
        for fleet, conflicts in plan.conflicts.items():
            for cluster, why in conflicts.items():
                log.debug("fleet deployment %s on cluster %s: %s", fleet, cluster, why)
        return ok

    def _write_states(self, plan: Plan, io: LoopIO, stop: threading.Event | None) -> bool:
        """Write the rollouts' new states and remove those of fleet deployments gone."""
        ok = True
        changes: list[tuple[str, Mapping[str, object] | None]] = [*plan.rollouts.items()]
        changes += [(fleet, None) for fleet in plan.rollout_removals]
        for fleet, status in changes:
            if status is not None and stop is not None and stop.is_set():
                return ok
            try:
                io.put_status(fleet, status)
            except ConfigStoreError as exc:
                ok = False
                log.warning("fleet deployment %s: cannot %s its rollout status: %s", fleet,
                            "write" if status is not None else "remove", exc)
                continue
            if status is not None:
                step = status.get("step")
                log.info("fleet deployment %s: rollout %s %s at step %d", fleet,
                         status.get("rolloutId"), status.get("state"),
                         (step if isinstance(step, int) else 0) + 1)
        return ok
