"""The Config Store's ``/metrics``: requests by route and code, latency, notify sessions."""

from __future__ import annotations

import uuid

from fplus.config_store import uuids
from harness.servers import Api, ConfigStoreProcess
from harness.stack import wait_for
from tests.config_store.notify_helpers import RawNotify, app_parent
from tests.metrics.conftest import scrape, value

REQUESTS = "config_store_http_requests_total"
LATENCY = "config_store_http_request_duration_seconds"
OBJECT_ROUTE = "/v2/object/<uuid:obj>"


def test_requests_counted_by_route_and_code_never_by_path(
        metrics_store: ConfigStoreProcess, store_admin: Api) -> None:
    before = scrape(metrics_store.url)
    missing = [str(uuid.uuid4()) for _ in range(3)]
    for obj in missing:
        assert store_admin.get(f"/v2/object/{obj}").status_code == 404
    assert store_admin.get("/ping").status_code == 200
    assert Api(metrics_store.url).get("/v2/object").status_code == 401
    assert store_admin.get("/no/such/route").status_code == 404
    after = scrape(metrics_store.url)

    def delta(route: str, method: str, code: str) -> float:
        labels = {"route": route, "method": method, "code": code}
        return value(after, REQUESTS, **labels) - value(before, REQUESTS, **labels)

    assert delta(OBJECT_ROUTE, "GET", "404") == 3  # one series for the route, not per uuid
    assert delta("/ping", "GET", "200") == 1
    assert delta("/v2/object", "GET", "401") == 1  # refused before the view: still counted
    assert delta("unmatched", "GET", "404") == 1
    assert delta("/metrics", "GET", "200") == 1  # the first scrape
    assert not any(obj in str(labels) for (_, labels) in after for obj in missing)
    # the histogram: a count per route, cumulative buckets ending at +Inf
    count = value(after, LATENCY + "_count", route=OBJECT_ROUTE)
    assert count - value(before, LATENCY + "_count", route=OBJECT_ROUTE) == 3
    assert value(after, LATENCY + "_bucket", route=OBJECT_ROUTE, le="+Inf") == count
    assert value(after, LATENCY + "_sum", route=OBJECT_ROUTE) > 0


def test_metrics_is_public_but_bad_credentials_are_refused(
        metrics_store: ConfigStoreProcess) -> None:
    api = Api(metrics_store.url, ("admin", "wrong"))
    assert api.get("/metrics").status_code == 401


def test_notify_sessions_and_queues(metrics_store: ConfigStoreProcess, store_admin: Api) -> None:
    def sessions() -> float:
        return value(scrape(metrics_store.url), "config_store_notify_sessions")

    start = sessions()
    with RawNotify.login(store_admin) as subscriber:
        sub = subscriber.watch(app_parent(uuids.App.ConfigSchema))
        assert subscriber.next(sub)["status"] == 201  # subscribed
        assert wait_for(lambda: sessions() == start + 1, what="the session counted")
        samples = scrape(metrics_store.url)  # every update read: nothing queued
        for name in ("queued_updates", "queued_bytes", "queue_max_updates"):
            assert (f"config_store_notify_{name}", frozenset()) in samples
            assert value(samples, f"config_store_notify_{name}") == 0
    assert wait_for(lambda: sessions() == start, what="the session gone")


def test_queue_gauges_sum_and_max_over_sessions() -> None:
    """The collector's arithmetic (queues cannot be held full on a live socket cheaply)."""
    from prometheus_client import CollectorRegistry, generate_latest

    from fplus.config_store._http.notify_metrics import track_notify

    class Sessions:
        def queues(self) -> list[tuple[int, int]]:
            return [(3, 300), (5, 120), (0, 0)]

    registry = CollectorRegistry()
    track_notify(registry, Sessions())  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    assert "config_store_notify_sessions 3.0" in text
    assert "config_store_notify_queued_updates 8.0" in text
    assert "config_store_notify_queued_bytes 420.0" in text
    assert "config_store_notify_queue_max_updates 5.0" in text
