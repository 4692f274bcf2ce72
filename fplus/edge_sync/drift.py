"""Which HelmReleases helm-controller found drifted, from its Events (pure).

helm-controller (v2 API) sets no condition for drift: when ``spec.driftDetection.mode`` is
``warn`` or ``enabled`` and a release's objects differ from its manifest, it emits a
Warning Event ``DriftDetected`` on the HelmRelease at each reconcile (every ``interval``);
with ``enabled`` it then corrects them and emits ``DriftCorrected`` (or
``DriftCorrectionFailed``). A HelmRelease counts as drifted while its newest such Event,
or a newer install/upgrade/rollback success, is a ``DriftDetected`` seen within
:data:`FRESH` (a drift put right by hand under ``warn`` stops being re-detected, so it
clears when the last detection ages out).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from fplus.jsontypes import Doc, as_object, text

DETECTED = "DriftDetected"
CLEARED = frozenset({"DriftCorrected", "InstallSucceeded", "UpgradeSucceeded",
                     "RollbackSucceeded"})
FRESH = timedelta(minutes=10)
"""How long a detection counts without being seen again (several reconcile intervals)."""


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
    newest: dict[tuple[str, str], tuple[datetime, bool]] = {}
    for event in events:
        reason = text(event, "reason")
        about = as_object(event.get("regarding") or event.get("involvedObject"))
        when = _when(event)
        if reason is None or when is None or about.get("kind") != "HelmRelease":
            continue
        if reason == DETECTED or reason in CLEARED:
            key = (str(about.get("namespace") or ""), str(about.get("name") or ""))
            seen = (when, reason in CLEARED)  # at the same time, a correction wins
            newest[key] = max(newest.get(key, seen), seen)
    return {key for key, (when, cleared) in newest.items()
            if not cleared and now - when <= FRESH}
