"""Which rollouts a label change moves a cluster into or out of: the fleet deployments and
the unfinished cluster rollouts that target the cluster with one of its configuration
entries and not with the other. Changing a cluster's labels takes the wildcard Clusters
grant when it moves the cluster (:func:`..services.clusters.grants.check_edit`, given this)."""

from __future__ import annotations

from collections.abc import Mapping

from fplus.config_store.client import ConfigStoreClient
from fplus.kubenames.labels import selector_errors

from ..model.cluster_config import targeted
from . import cluster_entry
from .fleet_entry import FLEET_APP
from .unfinished import unfinished


def label_moves(cs: ConfigStoreClient, cluster: str, before: Mapping[str, object],
                after: Mapping[str, object]) -> list[str]:
    """The fleet deployments and unfinished cluster rollouts that target ``cluster`` with
    one of its entries ``before`` and ``after`` and not with the other, named."""
    old, new = {cluster: before}, {cluster: after}
    moved = []
    fleets = cs.search(FLEET_APP, {}, {"name": "name", "selector": "selector",
                                       "clusters": "clusters"}) or {}
    for uuid, fleet in sorted(fleets.items()):
        if not isinstance(fleet, dict):
            continue
        selector, listed = fleet.get("selector"), fleet.get("clusters")
        listed = {c for c in listed if isinstance(c, str)} if isinstance(listed, list) else set()
        if isinstance(selector, dict) and not selector_errors(selector) and (
                bool(targeted(old, selector, listed))
                != bool(targeted(new, selector, listed))):
            moved.append(f"fleet deployment {fleet.get('name')!r} ({uuid})")
    for uuid, found in sorted(unfinished(cs).items()):
        entry = cluster_entry.parse_entry(found)
        if entry is None:
            continue  # the leader does not act on it
        if bool(cluster_entry.targets(entry, old)) != bool(
                cluster_entry.targets(entry, new)):
            moved.append(f"cluster rollout {entry.get('name')!r} ({uuid})")
    return moved
