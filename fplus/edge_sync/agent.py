"""Wiring: one status writer and the threads that feed it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from fplus.config_store.client import ConfigStoreClient, NotifyClient
from fplus.jsontypes import as_object, text

from . import __version__
from .certificate import CertificateSource, CertificateWatcher
from .deployments import Applier, ClusterInfo, DeploymentSync
from .flux_watch import ReadinessWatcher
from .kube import KUBE_OR_JSON_ERRORS, Kube
from .nodes import NodeWatcher
from .report import FluxReport, SecretRefs
from .settings import Settings
from .status import StatusReporter, utc_now
from .tunnel import Tunnel, edge_tunnel

log = logging.getLogger(__name__)

SELF_LINK = ("source.toolkit.fluxcd.io/v1", "gitrepositories", "self-link")
RECONNECT_DELAY = (10.0, 120.0)
"""``(first, cap)`` of the notify WebSocket's reconnection (full jitter, doubling per failure
in a row): after a Config Store restart, edges come back spread over the first 10 s, those
refused (a replica still down, or busy: its ``Retry-After`` is honoured) over 20, 40 …
up to 120 s, never all in the same instant."""


class Agent:
    """Edge Sync for one cluster: start it, let it run, stop it."""

    def __init__(self, settings: Settings, cs: ConfigStoreClient, kube: Kube, namespace: str,
                 *, reconnect_delay: tuple[float, float] = RECONNECT_DELAY) -> None:
        self.settings = settings
        self.kube = kube
        self.namespace = namespace
        self.reporter = StatusReporter(cs, settings.cluster_uuid, backoff=settings.backoff)
        self.nodes = NodeWatcher(kube, lambda hosts: self.reporter.update(hosts=hosts),
                                 watch_timeout=settings.watch_timeout, backoff=settings.backoff)
        source = CertificateSource(kube, settings.sealed_secrets_namespace,
                                   settings.sealed_secrets_controller,
                                   settings.sealed_secrets_port)
        self.certificate = CertificateWatcher(
            source, lambda pem: self.reporter.update(kubeseal_cert=pem),
            interval=settings.cert_interval, retry=settings.cert_retry)
        self.notify = NotifyClient(cs, reconnect_delay=reconnect_delay)
        self.deployments = DeploymentSync(
            self.notify, Applier(kube, namespace), settings.cluster_uuid,
            ClusterInfo(settings.cluster_name, settings.realm, settings.directory_url),
            lambda status: self.reporter.update(deployments=status), git_url=self.git_url,
            backoff=settings.backoff, resync_interval=settings.resync_interval)
        self.readiness = ReadinessWatcher(kube, namespace, self._report_flux,
                                          interval=settings.flux_interval)
        self.tunnel: Tunnel | None = None
        """The tunnel to the Cluster Manager (``CLUSTER_MANAGER_URL`` set), else None."""
        if settings.cluster_manager_url:
            self.tunnel = edge_tunnel(settings.cluster_manager_url, settings.cluster_uuid, cs,
                                      kube.api.configuration)
        self.stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    def git_url(self) -> str | None:
        """``GIT_URL``, else the base of the self-link GitRepository's ``<git>/uuid/<cluster>``."""
        if self.settings.git_url:
            return self.settings.git_url
        try:
            obj = self.kube.get_object(SELF_LINK[0], SELF_LINK[1], self.namespace, SELF_LINK[2])
        except KUBE_OR_JSON_ERRORS:
            return None
        url = text(as_object((obj or {}).get("spec")), "url") or ""
        suffix = f"/uuid/{self.settings.cluster_uuid}"
        return url[: -len(suffix)] if url.endswith(suffix) else None

    def heartbeat(self, stop: threading.Event) -> None:
        """``lastSeen`` and ``version`` every ``heartbeat_interval`` s."""
        while not stop.is_set():
            self.reporter.update(lastSeen=utc_now(), version=__version__)
            stop.wait(self.settings.heartbeat_interval)

    def _report_flux(self, report: FluxReport, applied: str | None,
                     secret_refs: SecretRefs) -> None:
        """The readiness report, the applied commit and the Secrets the Pods reference, in
        one update (one snapshot)."""
        if applied:
            self.reporter.update(flux=report, secretRefs=secret_refs, appliedCommit=applied)
        else:
            self.reporter.update(flux=report, secretRefs=secret_refs)

    def start(self) -> Agent:
        """Subscribe and start every loop in daemon threads."""
        log.info("edge-sync %s for cluster %s (%s), namespace %s", __version__,
                 self.settings.cluster_name, self.settings.cluster_uuid, self.namespace)
        self.deployments.subscribe()
        loops: dict[str, Callable[[threading.Event], object]] = {
            "status": self.reporter.run, "heartbeat": self.heartbeat, "nodes": self.nodes.run,
            "certificate": self.certificate.run, "deployments": self.deployments.run,
            "flux": self.readiness.run}
        if self.tunnel is not None:
            loops["tunnel"] = self.tunnel.run
        for name, loop in loops.items():
            thread = threading.Thread(target=self._guard, args=(name, loop),
                                      name=f"edge-sync-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def _guard(self, name: str, loop: Callable[[threading.Event], object]) -> None:
        """Run a loop; a bug that escapes it is logged and the loop restarted."""
        while not self.stopping.is_set():
            try:
                loop(self.stopping)
            except Exception:
                log.exception("edge-sync %s loop failed; restarting it", name)
                self.stopping.wait(self.settings.backoff.initial)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every loop, close the notify connection, the tunnel and the Kubernetes
        client."""
        self.stopping.set()
        self.reporter.wake()
        self.deployments.close()
        self.notify.close()
        if self.tunnel is not None:
            self.tunnel.close()
        self.kube.close()
        for thread in self._threads:
            thread.join(timeout)

    def __enter__(self) -> Agent:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
