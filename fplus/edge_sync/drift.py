"""Which HelmReleases helm-controller found drifted (pure).

With ``spec.driftDetection.mode`` ``warn`` or ``enabled``, helm-controller compares a
release's objects with its manifest at each reconcile (every ``interval``). The helm-controller
the edges run (v1.6.2, seen on a real edge) sets the HelmRelease's ``Drifted`` condition:
``True`` (``DriftDetected``) while they differ, ``False`` once they match (with ``enabled``
it puts them back). That condition is exact and is read first (:func:`drift_condition`).
Where a HelmRelease carries no such condition (another controller version), its Events
decide (:func:`drifted`): a Warning ``DriftDetected`` at each detection, ``DriftCorrected``
after a correction. A HelmRelease counts as drifted while its newest such Event, or a newer
install/upgrade/rollback success, is a ``DriftDetected`` seen within :data:`FRESH`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from fplus.jsontypes import Doc, as_list, as_object, is_object, text

DETECTED = "DriftDetected"
RELEASED = frozenset({"InstallSucceeded", "UpgradeSucceeded", "RollbackSucceeded"})
CORRECTED = "DriftCorrected"
RANK = {**dict.fromkeys(RELEASED, 0), DETECTED: 1, CORRECTED: 2}
"""Events stamped in the same second, in the order a reconcile makes them: a release, then
its drift detected, then corrected (Event times go to the second)."""
FRESH = timedelta(minutes=10)
"""How long a detection counts without being seen again (several reconcile intervals)."""
CONDITION = "Drifted"


def drift_condition(helm_release: Doc) -> bool | None:
    """The HelmRelease's ``Drifted`` condition: True, False, or None (absent or Unknown)."""
    for cond in as_list(as_object(helm_release.get("status")).get("conditions")):
        if is_object(cond) and cond.get("type") == CONDITION:
            return {"True": True, "False": False}.get(str(cond.get("status")))
    return None


def _when(event: Doc) -> datetime | None:
    """The last time an Event (events.k8s.io/v1 or core v1) was observed."""
    series = as_object(event.get("series"))
    for found in (text(series, "lastObservedTime"), text(event, "deprecatedLastTimestamp"),
                  text(event, "lastTimestamp"), text(event, "eventTime"),
                  text(as_object(event.get("metadata")), "creationTimestamp")):
        if found:
            try:
                return datetime.fromisoformat(found.replace("Z", "+00:00"))
            except ValueError:
                continue
    return None


def drifted(events: Iterable[Doc], now: datetime) -> set[tuple[str, str]]:
    """``(namespace, name)`` of each HelmRelease whose newest drift or release Event is a
    ``DriftDetected`` seen within :data:`FRESH` of ``now`` (aware)."""
    newest: dict[tuple[str, str], tuple[datetime, int]] = {}
    for event in events:
        reason = text(event, "reason")
        about = as_object(event.get("regarding") or event.get("involvedObject"))
        when = _when(event)
        if reason not in RANK or when is None or about.get("kind") != "HelmRelease":
            continue
        key = (str(about.get("namespace") or ""), str(about.get("name") or ""))
        seen = (when, RANK[reason])
        newest[key] = max(newest.get(key, seen), seen)
    return {key for key, (when, rank) in newest.items()
            if rank == RANK[DETECTED] and now - when <= FRESH}
