"""What ``GET /v1/cluster/<c>/status`` shows: the setup status plus a derived ``phase``.

The setup status (written by the reconciler) knows whether the repo and credentials are
in place; the Edge cluster status (written by Edge Sync on the edge) knows whether the
edge ever came up and when it last reported. The derived phase combines both:

========== ==================================================================
Pending     no setup status yet (the reconciler has not seen the entry)
Failed      the configuration is refused (see ``error``; ``refused`` holds the entry)
Provisioning commissioning in progress (or being retried after an error)
Ready       commissioned; Edge Sync has not sent a heartbeat yet (run the bootstrap)
Online      Edge Sync's heartbeat is recent
Stale       the heartbeat is late (more than ``stale_after`` old)
Offline     the heartbeat is older than ``offline_after``
Deleting    the cluster is being torn down
========== ==================================================================

Beside the phase, ``sync`` says whether the edge runs what the repo holds
(:mod:`...model.sync_state`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from fplus.jsontypes import Doc, is_object, text

from ...model.setup_status import DELETING, FAILED, SetupStatus
from ...model.sync_state import (
    FAILING_SHOWN,
    NOT_COMMISSIONED,
    UNKNOWN,
    Sync,
    derive_sync,
    report_count,
)


@dataclass(frozen=True)
class Liveness:
    """Heartbeat ages (seconds) at which an edge counts as Stale, then Offline."""

    stale_after: float = 90.0
    offline_after: float = 600.0


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 time (naive: UTC) as an aware datetime; None if it is not one."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def edge_text(edge: Doc | None, key: str) -> str | None:
    """A text field the edge reported (``lastSeen``, ``version``); None if absent or not text
    (the edge writes this entry: anything else is not echoed)."""
    return text(edge or {}, key)


def edge_state(edge: Doc | None, now: datetime,
               liveness: Liveness = Liveness()) -> str | None:
    """Online / Stale / Offline from Edge Sync's ``lastSeen``; None until a first heartbeat
    (an edge that never sent one is not late, it has not started)."""
    seen = parse_time((edge or {}).get("lastSeen"))
    if seen is None:
        return None
    age = (now - seen).total_seconds()
    if age > liveness.offline_after:
        return "Offline"
    return "Stale" if age > liveness.stale_after else "Online"


def derive_phase(setup: SetupStatus, edge: Doc | None, now: datetime,
                 liveness: Liveness = Liveness()) -> str:
    """The cluster's phase (see the module docstring)."""
    if not setup.exists:
        return "Pending"
    if setup.phase in (FAILED, DELETING):
        return setup.phase
    if not setup.ready:
        return "Provisioning"
    return edge_state(edge, now, liveness) or "Ready"


EDGE_SEARCH_FIELDS = {"appliedCommit": "appliedCommit", "lastSeen": "lastSeen",
                      "total": "flux.total", "ready": "flux.ready", "failed": "flux.failed",
                      "error": "flux.error"}
"""What a Config Store search selects of Edge cluster status entries for their liveness and
sync (:func:`searched_edge` rebuilds an entry from it), never the entries whole."""
_FLUX_FIELDS = ("total", "ready", "failed", "error")


def searched_edge(picked: Doc | None) -> dict[str, object] | None:
    """An edge entry rebuilt from the :data:`EDGE_SEARCH_FIELDS` a search picked (``flux``
    without its objects; other picked fields, such as ``hosts``, kept as they are)."""
    if not picked:
        return None
    edge: dict[str, object] = {k: v for k, v in picked.items() if k not in _FLUX_FIELDS}
    if "total" in picked:
        edge["flux"] = {k: picked[k] for k in _FLUX_FIELDS if k in picked}
    return edge


def host_count(edge: Doc | None) -> int:
    """How many hosts the edge reported (0 before it reports or if ``hosts`` is no list)."""
    hosts = (edge or {}).get("hosts")
    return len(hosts) if isinstance(hosts, list) else 0


def cluster_sync(setup: SetupStatus, edge: Doc | None, head: str | None,
                 now: datetime, liveness: Liveness = Liveness()) -> Sync:
    """The cluster's sync (:mod:`...model.sync_state`); Unknown until it is commissioned."""
    if not setup.ready or setup.phase in (FAILED, DELETING):
        return Sync(UNKNOWN, NOT_COMMISSIONED)
    return derive_sync(head, edge, edge_state(edge, now, liveness))


def _flux_counts(edge: Doc) -> dict[str, int] | None:
    report = edge.get("flux")
    if not is_object(report):
        return None
    return {key: value for key in ("total", "ready", "failed", "progressing")
            if (value := report_count(report, key)) is not None}


def cluster_status(setup: SetupStatus, edge: Doc | None, now: datetime,
                   liveness: Liveness = Liveness(), *, head: str | None = None
                   ) -> dict[str, object]:
    """The setup status with the derived ``phase``, the ``sync`` against the repo's
    ``head``, and a summary of what the edge reported (never the certificate itself, only
    whether there is one)."""
    view: dict[str, object] = dict(setup.entry)
    view["setupPhase"] = setup.entry.get("phase")
    view["phase"] = derive_phase(setup, edge, now, liveness)
    sync = cluster_sync(setup, edge, head, now, liveness)
    view["syncState"], view["syncReason"] = sync.state, sync.reason
    view["repoCommit"] = head
    if edge:
        view["edge"] = {
            "state": edge_state(edge, now, liveness),
            "lastSeen": edge_text(edge, "lastSeen"),
            "version": edge_text(edge, "version"),
            "hosts": host_count(edge),
            "sealingCertificate": isinstance(edge.get("kubeseal_cert"), str),
            "appliedCommit": sync.applied,
            "flux": _flux_counts(edge),
            "failing": sync.failing[:FAILING_SHOWN],
        }
    return view
