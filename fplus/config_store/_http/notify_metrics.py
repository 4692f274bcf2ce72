"""The notify/v2 sessions in ``/metrics``: how many are open and how much waits to be sent.

Computed at each scrape from :class:`NotifyRegistry` (a lock and one walk of the open
sessions), so a session costs nothing between scrapes.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily

from .._domain.notify import NotifyRegistry


class NotifyCollector:
    """``config_store_notify_sessions`` and the queue depths over every open session."""

    def __init__(self, sessions: NotifyRegistry) -> None:
        self.sessions = sessions

    def describe(self) -> list[GaugeMetricFamily]:
        return []  # computed at collection; nothing to check at registration

    def collect(self) -> Iterator[GaugeMetricFamily]:
        queues = self.sessions.queues()
        yield GaugeMetricFamily("config_store_notify_sessions",
                                "Open (authenticated) notify/v2 WebSocket sessions.",
                                value=len(queues))
        yield GaugeMetricFamily("config_store_notify_queued_updates",
                                "Updates waiting to be written, summed over every session.",
                                value=sum(items for items, _ in queues))
        yield GaugeMetricFamily("config_store_notify_queued_bytes",
                                "Bytes of updates waiting to be written, over every session.",
                                value=sum(size for _, size in queues))
        yield GaugeMetricFamily("config_store_notify_queue_max_updates",
                                "Updates waiting in the longest session queue (0 with none).",
                                value=max((items for items, _ in queues), default=0))


def track_notify(registry: CollectorRegistry, sessions: NotifyRegistry) -> None:
    """Report ``sessions`` in ``registry`` at every scrape."""
    registry.register(NotifyCollector(sessions))
