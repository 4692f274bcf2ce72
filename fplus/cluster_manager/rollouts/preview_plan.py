"""The step plan a rollout's preview shows (``?dryRun``, :mod:`..changes.preview`): its
targets cut into steps as the rollout would cut them (:func:`.steps.plan_steps`), the clusters
it would skip (``offline: skip`` and an edge that is Stale or Offline) and those that would
wait for a maintenance window (:func:`.windows.window_state`). Two searches (edges, windows),
whatever the number of clusters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.jsontypes import as_object, string_map

from ..changes.preview import Plan
from ..model.apps_and_roles import EDGE_APP
from ..services.clusters.status_view import edge_state
from .steps import SKIP, Spec, plan_steps
from .windows import parse_windows, window_state

WINDOW_APP = uuids.App.MaintenanceWindow


def preview_plan(cs: ConfigStoreClient, rollout: object, targets: Sequence[str],
                 configs: Mapping[str, Mapping[str, object]],
                 now: datetime | None = None) -> Plan:
    """The plan of a rollout with the ``rollout`` field over ``targets`` (``configs``: their
    configuration entries, for their labels)."""
    now = now or datetime.now(UTC)
    spec = Spec.parse(rollout)
    labels = {c: string_map(configs.get(c, {}).get("labels")) for c in targets}
    skipped: dict[str, str] = {}
    if spec.offline == SKIP:
        edges = as_object(cs.search(EDGE_APP, {}, {"lastSeen": "lastSeen"}))
        for cluster in targets:
            state = edge_state(as_object(edges.get(cluster)), now)
            if state in ("Stale", "Offline"):
                skipped[cluster] = (f"its edge is {state} (offline: skip); it gets the change "
                                    "when its edge reports again")
    windows = parse_windows(as_object(cs.search(WINDOW_APP, {}, {
        k: k for k in ("name", "selector", "schedule", "duration", "timeZone")})))
    waiting: dict[str, tuple[str, str | None]] = {}
    for cluster in targets:
        is_open, opens = window_state(labels[cluster], windows, now)
        if not is_open:
            waiting[cluster] = ("outside its maintenance windows",
                                opens.isoformat().replace("+00:00", "Z") if opens else None)
    return Plan(plan_steps(spec, targets, labels), skipped, waiting)
