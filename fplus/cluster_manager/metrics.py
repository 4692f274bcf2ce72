"""Prometheus metrics of the Cluster Manager (served at ``GET /metrics``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """The process's metrics, in a registry of their own (tests can make several)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.reconcile_seconds = Histogram(
            "cluster_manager_reconcile_seconds", "Time to reconcile one cluster.",
            ["outcome"], registry=self.registry,
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
        self.queue_depth = Gauge("cluster_manager_queue_depth",
                                 "Clusters waiting to be reconciled (including back-offs).",
                                 registry=self.registry)
        self.seals = Counter("cluster_manager_secret_operations_total",
                             "Secret seal/remove requests by operation and outcome.",
                             ["operation", "outcome"], registry=self.registry)
        self.bootstrap = Counter("cluster_manager_bootstrap_total",
                                 "Bootstrap URLs issued and scripts served or refused.",
                                 ["kind", "outcome"], registry=self.registry)
        self.errors = Counter("cluster_manager_errors_total",
                              "Failures by component (reconcile, http, audit).",
                              ["component"], registry=self.registry)

    def track_leadership(self, status: Callable[[], Any]) -> None:
        """Report ``status()`` (a :class:`~cluster_manager.leader.LeaderStatus`) at every
        scrape as ``cluster_manager_leader{identity, holder}``: 1 on the leader, else 0."""
        self.registry.register(_Computed(
            "cluster_manager_leader", "1 while this replica leads (reconciles), else 0; holder "
            "is the lease's holder as last seen.", ["identity", "holder"], status,
            _leadership_samples))

    def track_sync(self, counts: Callable[[], dict[str, int]]) -> None:
        """Report ``counts()`` (clusters by sync state) at every scrape as
        ``cluster_manager_clusters_sync{state}``."""
        self.registry.register(_Computed(
            "cluster_manager_clusters_sync", "Commissioned clusters by sync state (whether the "
            "edge runs what its repo holds).", ["state"], counts, _sync_samples))

    def track_fleet(self, counts: Callable[[], dict[str, int]]) -> None:
        """Report ``counts()`` (fleet deployments' Edge deployments by state) at every
        scrape as ``cluster_manager_fleet_deployments{state}``."""
        self.registry.register(_Computed(
            "cluster_manager_fleet_deployments", "Edge deployments of fleet deployments by "
            "state (ready, progressing, failed, unknown), from what each edge reports.",
            ["state"], counts, _sync_samples))

    def track_drift(self, drifted: Callable[[], int]) -> None:
        """Report ``drifted()`` (Edge deployments their edge reports drifted) at every scrape
        as ``cluster_manager_deployments_drifted``."""
        self.registry.register(_Computed(
            "cluster_manager_deployments_drifted", "Edge deployments whose objects "
            "helm-controller found changed on the edge (drift detection warn or enabled), "
            "as each edge reports it.", [], drifted, _value_sample))

    def track_phases(self, counts: Callable[[], dict[str, int]],
                     late_edges: Callable[[], int]) -> None:
        """Report ``counts()`` (clusters by phase) as ``cluster_manager_clusters{phase}`` and
        ``late_edges()`` as ``cluster_manager_edges_stale`` at every scrape."""
        self.registry.register(_Computed(
            "cluster_manager_clusters", "Clusters by phase (as GET /v1/cluster/:c/status "
            "derives it: the reconciler's phase and the edge's heartbeat).", ["phase"],
            counts, _sync_samples))
        self.registry.register(_Computed(
            "cluster_manager_edges_stale", "Edges whose last heartbeat is older than the "
            "stale threshold (phase Stale or Offline).", [], late_edges, _value_sample))

    def track_reseals(self, pending: Callable[[], int | None]) -> None:
        """Report ``pending()`` (escrowed keys waiting for a re-seal; None: unknown now, the
        last value is kept) as ``cluster_manager_reseals_pending`` at every scrape."""
        last = [0]

        def value() -> int:
            found = pending()
            if found is not None:
                last[0] = found
            return last[0]
        self.registry.register(_Computed(
            "cluster_manager_reseals_pending", "Escrowed secret keys sealed to another key "
            "than their cluster's pinned one: the leader's re-seal has yet to seal them.",
            [], value, _value_sample))

    def track_queue(self, depth: Callable[[], int]) -> None:
        """Report ``depth()`` as the queue depth at every scrape."""
        self.queue_depth.set_function(depth)

    @contextmanager
    def reconcile(self) -> Iterator[None]:
        """Time one reconcile; a raised exception counts as an error."""
        start = time.perf_counter()
        try:
            yield
        except Exception:
            self.reconcile_seconds.labels("error").observe(time.perf_counter() - start)
            self.errors.labels("reconcile").inc()
            raise
        self.reconcile_seconds.labels("ok").observe(time.perf_counter() - start)

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric."""
        return generate_latest(self.registry)


class _Computed:
    """A gauge whose samples ``samples(source())`` gives at every scrape."""

    def __init__(self, name: str, documentation: str, labels: list[str],
                 source: Callable[[], Any],
                 samples: Callable[[Any], Iterator[tuple[list[str], float]]]) -> None:
        self.name, self.documentation, self.labels = name, documentation, labels
        self.source, self.samples = source, samples

    def _family(self) -> GaugeMetricFamily:
        return GaugeMetricFamily(self.name, self.documentation, labels=self.labels)

    def describe(self) -> list[GaugeMetricFamily]:
        return [self._family()]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = self._family()
        for labels, value in self.samples(self.source()):
            family.add_metric(labels, value)
        yield family


def _leadership_samples(status: Any) -> Iterator[tuple[list[str], float]]:
    yield [status.identity, status.holder or ""], 1 if status.leading else 0


def _value_sample(value: int) -> Iterator[tuple[list[str], float]]:
    yield [], value


def _sync_samples(counts: dict[str, int]) -> Iterator[tuple[list[str], float]]:
    for state, count in sorted(counts.items()):
        yield [state], count
