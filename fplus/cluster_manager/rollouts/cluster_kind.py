"""The cluster rollout kind: a ``fluxVersion`` or Flux template paced over many clusters
(:func:`.cluster_entry.plan`).

Besides the cluster rollouts it follows the setup statuses and the Flux templates. Each pass
writes, in this order: the templates (a candidate, stored under the rollout's own object,
before any cluster is pinned to it), the configuration entries (each If-Match the etag the
plan was made from, so a concurrent edit is never lost: the pass fails and the next one
looks again), and only when all of those succeeded the rollouts' states (so a new leader
that finds a state finds what it says was written). Each entry written is taken as read at
once (with its new etag), so a pass that the state's notification causes before the
entry's does not write the entry again from the old etag.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from datetime import UTC, datetime

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreError
from fplus.jsontypes import JsonObject

from ..model.apps_and_roles import CONFIG_APP, EDGE_APP, STATUS_APP
from .cluster_entry import CLUSTER_ROLLOUT_APP, TEMPLATE_APP, World, plan
from .gates_input import DEFAULT_STALE_AFTER, GateInputs
from .kind import LoopIO, Pass, Snapshot
from .windows import parse_windows

log = logging.getLogger(__name__)


class ClusterKind:
    """Cluster rollouts (a ``fluxVersion`` or a Flux template)."""

    name = "cluster rollout"
    inputs: Mapping[str, str] = {
        "configs": CONFIG_APP, "edges": EDGE_APP, "clusterRollouts": CLUSTER_ROLLOUT_APP,
        "setups": STATUS_APP, "templates": TEMPLATE_APP,
        "windows": uuids.App.MaintenanceWindow}
    followed_while_rolling = frozenset({"edges", "setups", "windows"})

    def __init__(self, stale_after: float = DEFAULT_STALE_AFTER) -> None:
        self.stale_after = stale_after

    def make_pass(self, snapshot: Snapshot, io: LoopIO, stop: threading.Event) -> Pass:
        inputs = snapshot.inputs
        now = datetime.now(UTC)
        world = World(inputs["clusterRollouts"], inputs["configs"], io.entry_etags("configs"),
                      inputs["setups"], inputs["edges"], inputs["rollouts"],
                      inputs["templates"],
                      GateInputs(now, self.stale_after, parse_windows(inputs["windows"])))
        found = plan(world, now)
        done = self._write_clusters(found.templates, found.configs, world, io, stop)
        if done:
            for rollout, status in found.statuses.items():
                try:
                    io.put_status(rollout, status)
                    step = status.get("step")
                    log.info("cluster rollout %s: %s at step %d", rollout, status["state"],
                             (step if isinstance(step, int) else 0) + 1)
                except ConfigStoreError as exc:
                    done = False
                    log.warning("cluster rollout %s: cannot write its status: %s", rollout,
                                exc)
        return Pass(done, found.wake_in)

    def _write_clusters(self, templates: Mapping[str, JsonObject],
                        configs: Mapping[str, Mapping[str, object]],
                        world: World, io: LoopIO, stop: threading.Event) -> bool:
        """Write the templates, then the configuration entries; False if any failed."""
        for key, template in templates.items():
            try:
                etag = io.cs.put_config(TEMPLATE_APP, key, template)
                io.seen_entry("templates", key, template, etag)
                log.info("cluster rollouts: candidate Flux template %s written", key)
            except ConfigStoreError as exc:
                log.warning("cluster rollouts: cannot write Flux template %s: %s", key, exc)
                return False
        ok = True
        for cluster, config in configs.items():
            if stop.is_set():
                return False
            try:
                etag = io.cs.put_config(CONFIG_APP, cluster, config,
                                        if_match=world.config_etags.get(cluster))
                io.seen_entry("configs", cluster, config, etag)
                log.info("cluster rollouts: cluster %s given %s", cluster,
                         {k: config.get(k) for k in ("fluxVersion", "fluxTemplate")})
            except ConfigStoreError as exc:
                ok = False
                log.warning("cluster rollouts: cannot write the configuration of cluster "
                            "%s: %s", cluster, exc)
        return ok
