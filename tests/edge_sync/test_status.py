"""The status writer against a real Config Store: merge patches, retries, refusals."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from fplus.config_store.client import ConfigStoreClient, NotifyClient
from fplus.edge_sync.retry import Backoff
from fplus.edge_sync.status import StatusReporter, utc_now
from harness.servers import free_port
from tests.edge_sync.helpers import STATUS, Edge, make_edge, status, wait_for

HOSTS_A = [{"hostname": "a", "arch": "amd64", "k8s_version": "v1", "control_plane": True,
            "os_version": "x", "ready": True}]
HOSTS_B = [dict(HOSTS_A[0], hostname="b")]
HOSTS_C = [dict(HOSTS_A[0], hostname="c")]


def _client(store_url: str, edge: Edge) -> ConfigStoreClient:
    return ConfigStoreClient(store_url, edge.username, edge.password, retries=0)


def test_backoff_doubles_and_caps() -> None:
    backoff = Backoff(5, 320, jitter=0)
    assert [backoff.delay(n) for n in range(9)] == [0, 5, 10, 20, 40, 80, 160, 320, 320]
    assert backoff.delay(10_000) == 320
    jittered = [Backoff(5, 320).delay(3) for _ in range(200)]
    assert all(0 <= d <= 20 for d in jittered)  # full jitter: anywhere up to the step
    assert max(jittered) - min(jittered) > 10  # spread: edges failing together retry apart
    assert Backoff(5, 320, jitter=0).after(1, 42.0) == 42.0  # a Retry-After, when longer
    assert Backoff(5, 320, jitter=0).after(1, 1.0) == 5.0
    assert Backoff(5, 20, jitter=0).after(1, 999.0) == 20.0  # at most the cap


def test_only_changed_keys_are_patched_and_others_kept(
        edge_store, cs_admin: ConfigStoreClient, edge: Edge) -> None:
    cs_admin.put_config(STATUS, edge.uuid, {"hosts": HOSTS_A, "foreign": {"kept": True}})
    with _client(edge_store.url, edge) as cs:
        reporter = StatusReporter(cs, edge.uuid)
        reporter.update(kubeseal_cert="-----BEGIN CERTIFICATE-----\nx\n")
        assert reporter.flush().sent == ("kubeseal_cert",)
        assert reporter.flush().sent == ()  # nothing new: no request
        reporter.update(kubeseal_cert="-----BEGIN CERTIFICATE-----\nx\n", lastSeen=utc_now())
        assert reporter.flush().sent == ("lastSeen",)
    entry = status(cs_admin, edge)
    assert entry["hosts"] == HOSTS_A and entry["foreign"] == {"kept": True}
    assert entry["kubeseal_cert"].endswith("x\n")


def test_newer_value_supersedes_a_pending_retry(
        edge_store, cs_admin: ConfigStoreClient, edge: Edge) -> None:
    """Writes fail (store unreachable); the retry sends only the newest host list."""
    seen: list[Any] = []
    got_c = threading.Event()

    def record(value: Any) -> None:
        seen.append((value or {}).get("hosts"))
        if seen[-1] == HOSTS_C:
            got_c.set()

    with NotifyClient(cs_admin) as notify, \
            _client(f"http://127.0.0.1:{free_port()}", edge) as down, \
            _client(edge_store.url, edge) as up:
        sub = notify.watch(STATUS, edge.uuid, record)
        assert sub.wait_initial(10)
        now = [0.0]
        reporter = StatusReporter(up, edge.uuid, backoff=Backoff(5, 320, jitter=0),
                                  clock=lambda: now[0])
        reporter.update(hosts=HOSTS_A)
        assert reporter.flush().sent == ("hosts",)  # first write works...
        reporter.cs = down
        reporter.update(hosts=HOSTS_B)
        first = reporter.flush()
        assert not first.ok and reporter.failures == 1 and reporter.retry_in() == 5
        reporter.update(hosts=HOSTS_C)  # newer nodes arrive during the back-off
        assert reporter.pending() == {"hosts": HOSTS_C}
        assert not reporter.flush().ok and reporter.retry_in() == 10
        reporter.cs = up
        assert reporter.flush().sent == ("hosts",)
        assert reporter.failures == 0 and reporter.retry_in() == 0
        assert got_c.wait(10)
    assert HOSTS_B not in seen
    assert status(cs_admin, edge)["hosts"] == HOSTS_C


def test_refused_values_are_dropped_not_retried_for_ever(
        edge_store, cs_admin: ConfigStoreClient, edge: Edge,
        caplog: pytest.LogCaptureFixture) -> None:
    with _client(edge_store.url, edge) as cs:
        reporter = StatusReporter(cs, edge.uuid)
        reporter.update(hosts="not a list", lastSeen=utc_now())
        result = reporter.flush()
        assert result.ok and reporter.pending() == {}
        assert "refuses hosts" in caplog.text
        assert "hosts" not in status(cs_admin, edge) and status(cs_admin, edge)["lastSeen"]
        reporter.update(hosts=HOSTS_A)
        assert reporter.flush().sent == ("hosts",)


def test_a_second_clusters_principal_is_refused(
        edge_store, cs_admin: ConfigStoreClient, edge: Edge) -> None:
    intruder = make_edge(cs_admin)
    with _client(edge_store.url, intruder) as cs:
        reporter = StatusReporter(cs, edge.uuid)
        reporter.update(hosts=HOSTS_A)
        result = reporter.flush()
        assert not result.ok and "403" in (result.error or "")
        own = StatusReporter(cs, intruder.uuid)
        own.update(hosts=HOSTS_B)
        assert own.flush().ok
    assert status(cs_admin, edge) == {}
    assert status(cs_admin, intruder)["hosts"] == HOSTS_B


def test_run_writes_in_the_background_until_stopped(
        edge_store, cs_admin: ConfigStoreClient, edge: Edge) -> None:
    with _client(edge_store.url, edge) as cs:
        reporter = StatusReporter(cs, edge.uuid)
        stop = threading.Event()
        thread = threading.Thread(target=reporter.run, args=(stop,), daemon=True)
        thread.start()
        reporter.update(hosts=HOSTS_A)
        wait_for(lambda: status(cs_admin, edge).get("hosts") == HOSTS_A, what="hosts")
        reporter.update(hosts=HOSTS_B)
        wait_for(lambda: status(cs_admin, edge).get("hosts") == HOSTS_B, what="new hosts")
        stop.set()
        reporter.wake()
        thread.join(5)
        assert not thread.is_alive()
