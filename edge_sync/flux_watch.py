"""Read the readiness of what Flux applied and report it (the ``flux`` status key).

Every ``interval`` seconds the watcher reads the self-link GitRepository and lists every
Kustomization, HelmRelease and SealedSecret in the cluster, and hands the report
(:func:`~edge_sync.readiness.report`) on when it differs from the last one. A kind the API
server does not serve (no Sealed Secrets on this edge) is simply absent; a kind it refuses
or cannot list is named in the report's ``error``, so the Cluster Manager can say why it
does not know.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException

from .kube import KUBE_ERRORS, Kube, describe
from .readiness import CLUSTER_WIDE, GIT_REPOSITORY, Kind, object_state, report

log = logging.getLogger(__name__)

SELF_LINK = "self-link"
ReportCallback = Callable[[dict[str, Any]], None]


class ReadinessWatcher:
    """Polls Flux's objects and calls ``on_report`` with each changed report."""

    def __init__(self, kube: Kube, namespace: str, on_report: ReportCallback, *,
                 interval: float = 15.0) -> None:
        self.kube = kube
        self.namespace = namespace
        self.on_report = on_report
        self.interval = interval
        self._last: dict[str, Any] | None = None

    def collect(self) -> dict[str, Any]:
        """The report as of now (never raises for a failed Kubernetes call)."""
        entries: list[dict[str, Any]] = []
        errors: list[str] = []
        try:
            link = self.kube.get_object(GIT_REPOSITORY.api_version, GIT_REPOSITORY.plural,
                                        self.namespace, SELF_LINK)
        except KUBE_ERRORS as exc:
            errors.append(f"{GIT_REPOSITORY.kind} {SELF_LINK}: {describe(exc)}")
        else:
            if link is not None:
                entries.append(object_state(GIT_REPOSITORY, link))
        for kind in CLUSTER_WIDE:
            try:
                entries.extend(object_state(kind, obj) for obj in self._list(kind))
            except KUBE_ERRORS as exc:
                errors.append(f"listing {kind.kind}s: {describe(exc)}")
        return report(entries, error="; ".join(errors) or None)

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
            self.publish(self.collect())
            stop.wait(self.interval)

    def publish(self, current: dict[str, Any]) -> None:
        """Hand ``current`` on if it differs from the last report handed on."""
        if current == self._last:
            return
        previous, self._last = self._last, current
        if current.get("error") and current.get("error") != (previous or {}).get("error"):
            log.warning("flux status: %s", current["error"])
        log.info("flux status: %d object(s), %d ready, %d failed, %d progressing",
                 current["total"], current["ready"], current["failed"], current["progressing"])
        self.on_report(current)
