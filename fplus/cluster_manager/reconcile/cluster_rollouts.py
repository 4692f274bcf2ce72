"""The leader's rollout loop: the fleet loop (:mod:`.fleet`) that also paces cluster rollouts
(:mod:`..model.cluster_rollouts`) on the same subscriptions, snapshot and worker.

Besides the fleet inputs it follows the cluster rollouts, the setup statuses and the Flux
templates. Each pass makes the fleet pass, then the cluster rollouts' plan, written in this
order: the templates (a candidate, stored under the rollout's own object, before any cluster
is pinned to it), the configuration entries (each If-Match the etag the plan was
made from, so a concurrent edit is never lost: the pass fails and the next one looks again),
and only when all of those succeeded the rollout statuses (so a new leader that finds a
status finds what it says was written). Each entry written is taken as read at once (with
its new etag), so a pass that the status's notification causes before the entry's does not
write the entry again from the old etag.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime
from typing import Any

from fplus.config_store.client import ConfigStoreError

from ..model.apps_and_roles import CONFIG_APP, STATUS_APP
from ..model.cluster_rollouts import CLUSTER_ROLLOUT_APP, TEMPLATE_APP, World, plan
from ..model.rollout import ROLLOUT_APP
from .fleet import INPUTS, FleetLoop

log = logging.getLogger(__name__)


class RolloutLoop(FleetLoop):
    """Keeps fleet deployments expanded and cluster rollouts moving while this replica
    leads."""

    inputs = INPUTS | {"clusterRollouts": CLUSTER_ROLLOUT_APP, "setups": STATUS_APP,
                       "templates": TEMPLATE_APP}

    def make_pass(self, inputs: dict[str, Any], etags: dict[str, str],
                  stop: threading.Event) -> tuple[bool, float | None]:
        ok, wake_in = super().make_pass(inputs, etags, stop)
        world = World(inputs["clusterRollouts"], inputs["configs"],
                      self.entry_etags("configs"), inputs["setups"], inputs["edges"],
                      inputs["rollouts"], inputs["templates"])
        found = plan(world, datetime.now(UTC))
        done = self._apply_clusters(found.templates, found.configs, world, stop)
        if done:
            for rollout, status in found.statuses.items():
                try:
                    self.cs.put_config(ROLLOUT_APP, rollout, status)
                    self.seen(rollout, status)
                    log.info("cluster rollout %s: %s at step %d", rollout, status["state"],
                             status.get("step", 0) + 1)
                except ConfigStoreError as exc:
                    done = False
                    log.warning("cluster rollout %s: cannot write its status: %s", rollout,
                                exc)
        waits = [w for w in (wake_in, found.wake_in) if w is not None]
        return ok and done, min(waits) if waits else None

    def _apply_clusters(self, templates: dict[str, Any], configs: dict[str, Any],
                        world: World, stop: threading.Event) -> bool:
        """Write the templates, then the configuration entries; False if any failed."""
        for key, template in templates.items():
            try:
                etag = self.cs.put_config(TEMPLATE_APP, key, template)
                self.seen_entry("templates", key, template, etag)
                log.info("cluster rollouts: candidate Flux template %s written", key)
            except ConfigStoreError as exc:
                log.warning("cluster rollouts: cannot write Flux template %s: %s", key, exc)
                return False
        ok = True
        for cluster, config in configs.items():
            if stop.is_set():
                return False
            try:
                etag = self.cs.put_config(CONFIG_APP, cluster, config,
                                          if_match=world.config_etags.get(cluster))
                self.seen_entry("configs", cluster, config, etag)
                log.info("cluster rollouts: cluster %s given %s", cluster,
                         {k: config.get(k) for k in ("fluxVersion", "fluxTemplate")})
            except ConfigStoreError as exc:
                ok = False
                log.warning("cluster rollouts: cannot write the configuration of cluster "
                            "%s: %s", cluster, exc)
        return ok
