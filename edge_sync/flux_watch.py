"""Read the readiness of what Flux applied and report it (``flux`` and ``appliedCommit``).

Every ``interval`` seconds the watcher reads the self-link GitRepository and Kustomization
by name and lists every Kustomization, HelmRelease and SealedSecret in the cluster, and
hands the report (:func:`~edge_sync.readiness.report`) and the commit the self-link applied
on when they differ from the last ones. Reading the self-link by name keeps
``appliedCommit`` (which a teardown waits for) working where Edge Sync may not list.

A kind the API server does not serve (no Sealed Secrets on this edge) is simply absent; a
kind it refuses or cannot list is named in the report's ``error``, so the Cluster Manager
can say why it does not know.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException

from .kube import KUBE_ERRORS, Kube, describe
from .readiness import (
    CLUSTER_WIDE,
    GIT_REPOSITORY,
    KUSTOMIZATION,
    Kind,
    applied_commit,
    object_state,
    report,
)

log = logging.getLogger(__name__)

SELF_LINK = "self-link"
_FAILED = (*KUBE_ERRORS, ValueError)  # no answer, an error answer, or one that is not JSON
ReportCallback = Callable[[dict[str, Any], str | None], None]
"""``on_report(report, applied_commit)``."""


class ReadinessWatcher:
    """Polls Flux's objects and calls ``on_report`` with each changed report and applied
    commit."""

    def __init__(self, kube: Kube, namespace: str, on_report: ReportCallback, *,
                 interval: float = 15.0) -> None:
        self.kube = kube
        self.namespace = namespace
        self.on_report = on_report
        self.interval = interval
        self._last: tuple[dict[str, Any], str | None] | None = None

    def collect(self) -> tuple[dict[str, Any], str | None]:
        """The report and the applied commit as of now (never raises for a failed
        Kubernetes call)."""
        entries: list[dict[str, Any]] = []
        errors: list[str] = []
        link = self._self_link(GIT_REPOSITORY, errors)
        if link is not None:
            entries.append(object_state(GIT_REPOSITORY, link))
        applied = applied_commit(self._self_link(KUSTOMIZATION, errors))
        for kind in CLUSTER_WIDE:
            try:
                entries.extend(object_state(kind, obj) for obj in self._list(kind)
                               if isinstance(obj, dict))
            except _FAILED as exc:
                errors.append(f"listing {kind.kind}s: {describe(exc)}")
        return report(entries, error="; ".join(errors) or None), applied

    def _self_link(self, kind: Kind, errors: list[str]) -> dict[str, Any] | None:
        try:
            return self.kube.get_object(kind.api_version, kind.plural, self.namespace, SELF_LINK)
        except _FAILED as exc:
            errors.append(f"{kind.kind} {SELF_LINK}: {describe(exc)}")
            return None

    def _list(self, kind: Kind) -> list[dict[str, Any]]:
        try:
            return self.kube.list_all(kind.api_version, kind.plural)
        except ApiException as exc:
            if exc.status == 404:  # the kind is not installed here
                return []
            raise

    def run(self, stop: threading.Event) -> None:
        """Report every ``interval`` seconds until ``stop`` is set."""
        while not stop.is_set():
            self.publish(*self.collect())
            stop.wait(self.interval)

    def publish(self, current: dict[str, Any], applied: str | None) -> None:
        """Hand ``current`` and ``applied`` on if either differs from the last ones."""
        if (current, applied) == self._last:
            return
        previous = self._last[0] if self._last else {}
        self._last = (current, applied)
        if current.get("error") and current.get("error") != previous.get("error"):
            log.warning("flux status: %s", current["error"])
        log.info("flux status: %d object(s), %d ready, %d failed, %d progressing; applied %s",
                 current["total"], current["ready"], current["failed"], current["progressing"],
                 applied or "nothing yet")
        self.on_report(current, applied)
