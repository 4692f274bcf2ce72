"""Prometheus metrics of a Flask service's HTTP requests, served at ``GET /metrics``.

One registry per app (tests run several apps in a process). A request is counted by its
route (the Flask URL rule, ``unmatched`` when none matched: never the raw path, whose uuids
would make a series per object), method and status code, and its time to the response's
headers observed in a histogram by route. A WebSocket is counted with code ``101`` once it
ends and is left out of the histogram (its time is the session's, not a request's).
"""

from __future__ import annotations

import time

from flask import Flask, Response, g, request
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .websocket_route import WebSocketDone

UNMATCHED = "unmatched"
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class HttpMetrics:
    """The requests counter and latency histogram of one service, named ``<service>_…``."""

    def __init__(self, service: str) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            f"{service}_http_requests_total", "HTTP requests by route, method and status code.",
            ["route", "method", "code"], registry=self.registry)
        self.latency = Histogram(
            f"{service}_http_request_duration_seconds",
            "Time from a request's start to its response's headers, by route.",
            ["route"], registry=self.registry, buckets=BUCKETS)

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric of the registry."""
        return generate_latest(self.registry)

    def install(self, app: Flask) -> None:
        """Count ``app``'s requests (its first ``before_request``, so a request refused
        there is timed too) and serve ``GET /metrics`` (endpoint ``metrics``, public)."""
        app.before_request_funcs.setdefault(None, []).insert(0, _start)
        app.after_request(self._observe)
        app.add_url_rule("/metrics", "metrics", self._serve, methods=["GET"])
        app.extensions["http_metrics"] = self

    def _serve(self) -> Response:
        return Response(self.exposition(), content_type=CONTENT_TYPE_LATEST)

    def _observe(self, response: Response) -> Response:
        rule = request.url_rule
        route = rule.rule if rule is not None else UNMATCHED
        if isinstance(response, WebSocketDone):
            self.requests.labels(route, request.method, "101").inc()
            return response
        self.requests.labels(route, request.method, str(response.status_code)).inc()
        start = g.get("metrics_start")
        if start is not None:
            self.latency.labels(route).observe(time.perf_counter() - start)
        return response


def _start() -> None:
    g.metrics_start = time.perf_counter()
