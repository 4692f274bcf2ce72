"""The step plan a rollout's preview shows (``?dryRun``, :mod:`..changes.preview`): its
targets cut into steps as the rollout would cut them (:func:`.steps.plan_steps`), the clusters
it would skip (``offline: skip`` and an edge that has not reported within the Cluster
Manager's stale threshold) and those that would wait for a maintenance window. Both by the
leader's own rule (:class:`.gates_input.GateInputs`, with the reasons its status gives). Two
searches (edges, windows), whatever the number of clusters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.jsontypes import as_object, string_map

from ..changes.preview import Plan
from ..model.apps_and_roles import EDGE_APP
from .gates import OFFLINE, OUTSIDE
from .gates_input import GateInputs
from .steps import SKIP, Spec, plan_steps
from .windows import parse_windows

WINDOW_APP = uuids.App.MaintenanceWindow
WINDOW_FIELDS = ("name", "selector", "schedule", "duration", "timeZone")
SKIPPED = f"{OFFLINE} (offline: skip); it gets the change when its edge reports again"


def preview_plan(cs: ConfigStoreClient, rollout: object, targets: Sequence[str],
                 configs: Mapping[str, Mapping[str, object]], *, stale_after: float,
                 now: datetime | None = None) -> Plan:
    """The plan of a rollout with the ``rollout`` field over ``targets`` (``configs``: their
    configuration entries, for their labels; ``stale_after``: the Cluster Manager's
    ``--edge-stale-after``)."""
    spec = Spec.parse(rollout)
    labels = {c: string_map(configs.get(c, {}).get("labels")) for c in targets}
    gate = GateInputs(now or datetime.now(UTC), stale_after, parse_windows(as_object(
        cs.search(WINDOW_APP, {}, {k: k for k in WINDOW_FIELDS}))))
    skipped: dict[str, str] = {}
    if spec.offline == SKIP:
        edges = as_object(cs.search(EDGE_APP, {}, {"lastSeen": "lastSeen"}))
        skipped = dict.fromkeys(sorted(gate.offline(targets, edges)), SKIPPED)
    waiting = {c: (OUTSIDE, opens) for c, opens in gate.closed(labels).items()}
    return Plan(plan_steps(spec, targets, labels), skipped, waiting)
