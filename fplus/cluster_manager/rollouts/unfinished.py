"""The cluster rollouts not finished: those whose current change has no ``Complete`` or
``Aborted`` status yet (the leader still writes clusters' entries for them)."""

from __future__ import annotations

from fplus.config_store.client import ConfigStoreClient

from .cluster_entry import CLUSTER_ROLLOUT_APP, FIELDS, revision
from .state import FINISHED, ROLLOUT_APP


def unfinished(cs: ConfigStoreClient) -> dict[str, dict[str, object]]:
    """Every unfinished cluster rollout's entry (its :data:`FIELDS` that are set), by uuid:
    two searches, whatever their number."""
    entries = cs.search(CLUSTER_ROLLOUT_APP, {}, {k: k for k in FIELDS}) or {}
    statuses = cs.search(ROLLOUT_APP, {}, {"state": "state", "revision": "revision"}) or {}
    found = {}
    for uuid, entry in entries.items():
        if not isinstance(entry, dict):
            continue
        entry = {k: v for k, v in entry.items() if v is not None}
        status = statuses.get(uuid)
        if not (isinstance(status, dict) and status.get("state") in FINISHED
                and status.get("revision") == revision(entry)):
            found[uuid] = entry
    return found
