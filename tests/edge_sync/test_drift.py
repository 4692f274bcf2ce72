"""Drift as helm-controller reports it (the HelmRelease's ``Drifted`` condition; without
one, Warning Events ``DriftDetected`` on it and ``DriftCorrected`` once it put the objects
back): which HelmReleases are drifted (pure), and the readiness report marking them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fplus.edge_sync.drift import drift_condition, drifted
from fplus.edge_sync.flux_watch import EVENTS, ReadinessWatcher

NOW = datetime(2026, 11, 25, 10, 30, tzinfo=UTC)
NS = "fplus-edge"


def event(reason: str, at: str, name: str = "panel-1", kind: str = "HelmRelease",
          **more: Any) -> dict[str, Any]:
    """An events.k8s.io/v1 Event as helm-controller's recorder leaves it."""
    return {"reason": reason, "type": "Warning" if reason == "DriftDetected" else "Normal",
            "regarding": {"kind": kind, "namespace": NS, "name": name},
            "deprecatedLastTimestamp": at, **more}


def test_a_recent_detection_is_drift() -> None:
    assert drifted([event("DriftDetected", "2026-11-25T10:28:00Z")], NOW) == {(NS, "panel-1")}


def test_a_correction_or_a_new_release_after_it_clears_it() -> None:
    for after in ("DriftCorrected", "UpgradeSucceeded", "InstallSucceeded"):
        assert drifted([event("DriftDetected", "2026-11-25T10:28:00Z"),
                        event(after, "2026-11-25T10:29:00Z")], NOW) == set()


def test_a_correction_in_the_same_second_clears_it() -> None:
    assert drifted([event("DriftCorrected", "2026-11-25T10:28:00Z"),
                    event("DriftDetected", "2026-11-25T10:28:00Z")], NOW) == set()


def test_a_detection_in_the_second_of_the_install_is_drift() -> None:
    """Event times go to the second: a reconcile installs, then finds drift, in one."""
    assert drifted([event("InstallSucceeded", "2026-11-25T10:28:00Z"),
                    event("DriftDetected", "2026-11-25T10:28:00Z")], NOW) == {(NS, "panel-1")}


def test_the_drifted_condition_reads_true_false_or_none() -> None:
    def release(status: str | None) -> dict[str, Any]:
        conditions = [] if status is None else [{"type": "Drifted", "status": status}]
        return {"status": {"conditions": [{"type": "Ready", "status": "True"}, *conditions]}}
    assert [drift_condition(release(s)) for s in ("True", "False", "Unknown", None)] == [
        True, False, None, None]


def test_a_detection_seen_again_after_an_old_correction_is_drift() -> None:
    """A repeated detection is one Event whose series' last observation moves on."""
    again = event("DriftDetected", "2026-11-25T10:00:00Z",
                  series={"count": 5, "lastObservedTime": "2026-11-25T10:29:00.000000Z"})
    assert drifted([event("DriftCorrected", "2026-11-25T10:10:00Z"), again], NOW) == {
        (NS, "panel-1")}


def test_an_old_detection_and_other_objects_events_are_not() -> None:
    assert drifted([event("DriftDetected", "2026-11-25T10:05:00Z")], NOW) == set()
    assert drifted([event("DriftDetected", "2026-11-25T10:29:00Z", kind="Kustomization"),
                    event("Progressing", "2026-11-25T10:29:00Z")], NOW) == set()


class FakeKube:
    """What the readiness watcher reads: two HelmReleases and their Events."""

    def __init__(self, events: list[dict[str, Any]] | Exception,
                 drifted: dict[str, str] | None = None) -> None:
        self.events = events
        self.drifted = drifted or {}
        """HelmRelease name -> its ``Drifted`` condition's status (none: no condition)."""

    def get_object(self, *_: Any) -> None:
        return None

    def list_all(self, _api: str, plural: str) -> list[dict[str, Any]]:
        if plural != "helmreleases":
            return []
        return [{"metadata": {"namespace": NS, "name": n, "generation": 1},
                 "status": {"observedGeneration": 1, "conditions": [
                     {"type": "Ready", "status": "True", "reason": "UpgradeSucceeded"},
                     *([{"type": "Drifted", "status": self.drifted[n]}]
                       if n in self.drifted else [])]}}
                for n in ("panel-1", "broker-1")]

    def list_objects(self, api: str, plural: str, namespace: str,
                     _selector: str) -> list[dict[str, Any]]:
        assert (api, plural, namespace) == (*EVENTS, NS)
        if isinstance(self.events, Exception):
            raise self.events
        return self.events


def _report(kube: FakeKube) -> dict[str, dict[str, Any]]:
    watcher = ReadinessWatcher(kube, NS, lambda *_: None,  # type: ignore[arg-type]
                               now=lambda: "2026-11-25T10:30:00Z")
    flux = watcher.collect()[0]
    assert flux["error"] is None
    return {o["name"]: dict(o) for o in flux["objects"]}


def test_the_report_marks_the_drifted_helm_release_only() -> None:
    found = _report(FakeKube([event("DriftDetected", "2026-11-25T10:29:00Z")]))
    assert found["panel-1"].get("drifted") is True and found["panel-1"]["ready"] == "True"
    assert "drifted" not in found["broker-1"]


def test_events_that_cannot_be_read_report_no_drift_and_no_error() -> None:
    watcher_report = _report(FakeKube(ValueError("forbidden")))
    assert not any(o.get("drifted") for o in watcher_report.values())


def test_the_condition_decides_where_there_is_one() -> None:
    """``Drifted=False`` outweighs a recent detection Event; ``True`` needs no Event."""
    stale_event = [event("DriftDetected", "2026-11-25T10:29:00Z")]
    found = _report(FakeKube(stale_event, {"panel-1": "False", "broker-1": "True"}))
    assert "drifted" not in found["panel-1"] and found["broker-1"].get("drifted") is True
    quiet = _report(FakeKube(AssertionError("no Events read"), {"panel-1": "False",
                                                                "broker-1": "False"}))
    assert not any(o.get("drifted") for o in quiet.values())
