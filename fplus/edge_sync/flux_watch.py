"""Read the readiness of what Flux applied and report it (``flux`` and ``appliedCommit``),
with the Secrets the Pods reference (``secretRefs``).

Every ``interval`` seconds the watcher reads the self-link GitRepository and Kustomization
by name and lists every Kustomization, HelmRelease and SealedSecret in the cluster, and
hands the report (:func:`~edge_sync.readiness.report`) and the commit the self-link applied
on when they differ from the last ones. A HelmRelease in Edge Sync's namespace whose
``Drifted`` condition (or, without one, helm-controller's Events) says it drifted
(:mod:`.drift`) is reported ``drifted``. Reading the
self-link by name keeps ``appliedCommit`` (which a teardown waits for) working where Edge
Sync may not list.

A kind the API server does not serve (no Sealed Secrets on this edge) is simply absent; a
kind it refuses or cannot list is named in the report's ``error``, so the Cluster Manager
can say why it does not know.

The same pass lists every Pod and hands on, with the same call (one snapshot, one write),
the Secrets they reference (:func:`~edge_sync.secret_refs.report`, ``secretRefs``). Its
``at`` is the time of the listing: a report whose references (and error) are unchanged is
handed on again only once it is ``refresh`` seconds old, so ``at`` stays recent without a
write every pass. Pods that cannot be listed give ``error`` and no ``secrets`` (unknown,
not "none"); they never hold back the ``flux`` report.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from kubernetes.client.exceptions import ApiException

from .drift import drift_condition, drifted
from .kube import KUBE_OR_JSON_ERRORS, Kube, KubeObject, describe
from .readiness import (
    CLUSTER_WIDE,
    GIT_REPOSITORY,
    KUSTOMIZATION,
    Kind,
    applied_commit,
    object_state,
    report,
)
from .report import FluxObject, FluxReport, SecretRefs
from .secret_refs import collect as collect_refs
from .secret_refs import report as refs_report

log = logging.getLogger(__name__)

SELF_LINK = "self-link"
EVENTS = ("events.k8s.io/v1", "events")
_FAILED = KUBE_OR_JSON_ERRORS  # no answer, an error answer, or one that is not JSON
ReportCallback = Callable[[FluxReport, str | None, SecretRefs], None]
"""``on_report(report, applied_commit, secret_refs)``."""


def kube_time() -> str:
    """Now in UTC as Kubernetes writes times (``2026-11-25T10:00:00Z``, as the flux report's
    ``since``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ReadinessWatcher:
    """Polls Flux's objects and the Pods, and calls ``on_report`` with each changed report,
    applied commit and Secret references."""

    def __init__(self, kube: Kube, namespace: str, on_report: ReportCallback, *,
                 interval: float = 15.0, refresh: float = 300.0, pod_page: int = 500,
                 now: Callable[[], str] = kube_time,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``refresh``: seconds after which unchanged Secret references are handed on again
        (a newer ``at``); ``pod_page``: Pods per list request; ``now``: the ``at`` of a
        listing; ``clock``: measures ``refresh``."""
        self.kube = kube
        self.namespace = namespace
        self.on_report = on_report
        self.interval = interval
        self.refresh = refresh
        self.pod_page = pod_page
        self._now = now
        self._clock = clock
        self._last: tuple[FluxReport, str | None, SecretRefs] | None = None
        self._drift_error: str | None = None
        self._refs_sent_at = 0.0

    def collect(self) -> tuple[FluxReport, str | None]:
        """The readiness report and the applied commit as of now (never raises for a failed
        Kubernetes call)."""
        entries: list[FluxObject] = []
        errors: list[str] = []
        link = self._self_link(GIT_REPOSITORY, errors)
        if link is not None:
            entries.append(object_state(GIT_REPOSITORY, link))
        applied = applied_commit(self._self_link(KUSTOMIZATION, errors))
        conditions: dict[str, bool | None] = {}
        for kind in CLUSTER_WIDE:
            try:
                for obj in self._list(kind):
                    entry = object_state(kind, obj)
                    entries.append(entry)
                    if kind.kind == "HelmRelease" and entry["namespace"] == self.namespace:
                        conditions[entry["name"]] = drift_condition(obj)
            except _FAILED as exc:
                errors.append(f"listing {kind.kind}s: {describe(exc)}")
        unknown = any(c is None for c in conditions.values())
        by_events = {name for _, name in self._drifted()} if unknown else set()
        for entry in entries:
            name = entry["name"]
            if entry["kind"] == "HelmRelease" and entry["namespace"] == self.namespace \
                    and name in conditions and (
                    conditions[name] or (conditions[name] is None and name in by_events)):
                entry["drifted"] = True
        return report(entries, error="; ".join(errors) or None), applied

    def _drifted(self) -> set[tuple[str, str]]:
        """The HelmReleases in our namespace helm-controller's Events call drifted (for
        those without a ``Drifted`` condition, :mod:`.drift`); none if the Events cannot be
        read (an edge whose Role predates it), which is logged, not reported as an error."""
        try:
            events = self.kube.list_objects(*EVENTS, self.namespace, "")
        except _FAILED as exc:
            if self._drift_error != (why := describe(exc)):
                log.warning("drift: cannot list Events: %s", why)
            self._drift_error = why
            return set()
        self._drift_error = None
        return drifted(events, datetime.fromisoformat(self._now().replace("Z", "+00:00")))

    def _self_link(self, kind: Kind, errors: list[str]) -> KubeObject | None:
        try:
            return self.kube.get_object(kind.api_version, kind.plural, self.namespace, SELF_LINK)
        except _FAILED as exc:
            errors.append(f"{kind.kind} {SELF_LINK}: {describe(exc)}")
            return None

    def _list(self, kind: Kind) -> list[KubeObject]:
        try:
            return self.kube.list_all(kind.api_version, kind.plural)
        except ApiException as exc:
            if exc.status == 404:  # the kind is not installed here
                return []
            raise

    def secret_refs(self) -> SecretRefs:
        """The ``secretRefs`` report as of now (never raises for a failed Kubernetes call)."""
        at = self._now()
        try:
            refs = collect_refs(self.kube.list_pods(self.pod_page))
        except _FAILED as exc:
            return refs_report(None, at=at, error=f"listing Pods: {describe(exc)}")
        return refs_report(refs, at=at)

    def run(self, stop: threading.Event) -> None:
        """Report every ``interval`` seconds until ``stop`` is set."""
        while not stop.is_set():
            self.publish(*self.collect(), self.secret_refs())
            stop.wait(self.interval)

    def publish(self, current: FluxReport, applied: str | None, refs: SecretRefs) -> None:
        """Hand the three on if any differs from the last ones (``refs`` only by its
        references and error, or once the last ones handed on are ``refresh`` seconds old)."""
        last_refs = self._last[2] if self._last else None
        if (last_refs is not None and _without_at(refs) == _without_at(last_refs)
                and self._clock() - self._refs_sent_at < self.refresh):
            refs = last_refs  # unchanged and recent enough: no write for a newer `at` alone
        if (current, applied, refs) == self._last:
            return
        previous = self._last
        self._last = (current, applied, refs)
        if refs is not last_refs:
            self._refs_sent_at = self._clock()
        if current["error"] and (previous is None or current["error"] != previous[0]["error"]):
            log.warning("flux status: %s", current["error"])
        if previous is None or (current, applied) != previous[:2]:
            log.info("flux status: %d object(s), %d ready, %d failed, %d progressing; "
                     "applied %s", current["total"], current["ready"], current["failed"],
                     current["progressing"], applied or "nothing yet")
        self._log_refs(refs, last_refs)
        self.on_report(current, applied, refs)

    @staticmethod
    def _log_refs(refs: SecretRefs, previous: SecretRefs | None) -> None:
        if refs["error"]:
            if previous is None or refs["error"] != previous["error"]:
                log.warning("secret references: %s", refs["error"])
        elif refs["secrets"] is not None and (
                previous is None or refs["secrets"] != previous["secrets"]):
            log.info("secret references: %d secret(s) referenced by pods%s",
                     len(refs["secrets"]), " (truncated)" if refs["truncated"] else "")


def _without_at(refs: SecretRefs) -> tuple[object, ...]:
    return refs["secrets"], refs["truncated"], refs["error"]
