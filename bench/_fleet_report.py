"""What ``bench/fleet.py`` reports of its load: the restart, write latency inside and
outside the restart window, and what each edge costs (CPU and memory per edge), so runs of
different sizes compare."""

from __future__ import annotations

import argparse
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any

from bench._common import cpu_seconds, pct
from harness.servers import ServiceProcess

TARGET = {"edges": 50000, "write_p99_ms_outside_restart": 50, "restart_ping_s": 10,
          "restart_all_back_s": 120}
"""The issue's Done-when: every edge connected before and back after a replica restart,
the restarted replica answering ``/ping`` within 10 s of its start, all its edges back within
120 s of the kill, write p99 under 50 ms outside the restart window."""

Back = tuple[float | None, float | None, float | None, float | None]
"""One watched edge's ``(lost, back, write failed, written again)`` monotonic times."""


@dataclass
class Restart:
    """One replica killed mid-load and started again: when it went down and answered."""

    replica: int
    down_at: float | None = None
    started_at: float | None = None
    """When its new process was started (right after the kill)."""
    up_at: float | None = None
    cpu_at_kill: float = 0.0
    error: str | None = None
    """Why the replica did not come back (it is then down for the rest of the load)."""

    def run(self, stores: list[ServiceProcess], at: float, stop: threading.Event) -> None:
        """At monotonic time ``at`` (unless ``stop`` comes first), kill -9 the replica's
        process group and start it again on the same port and data directory."""
        if stop.wait(max(0.0, at - time.monotonic())):
            return
        store = stores[self.replica]
        self.cpu_at_kill = cpu_seconds(store.proc.pid) if store.proc else 0.0
        self.down_at = time.monotonic()
        store.stop(signal.SIGKILL)
        store.start_timeout = 120.0  # its edges all reconnect while it starts
        self.started_at = time.monotonic()
        try:
            store.start()
        except RuntimeError as exc:
            self.error = str(exc)
            return
        self.up_at = time.monotonic()

    @staticmethod
    def ready(back: list[Back]) -> list[float | None]:
        """When each watched edge was back: connected, subscribed and, if a write of its
        failed, written again (None: not back)."""
        return [None if b is None or (f is not None and w is None) else max(b, w or b)
                for _, b, f, w in back]

    def window(self, back: list[Back], end: float) -> tuple[float, float] | None:
        """``(kill, every edge of the replica back)`` in monotonic time; the window runs to
        ``end`` if some edge never came back. None without a restart."""
        if self.down_at is None:
            return None
        ready = self.ready(back)
        done = [r for r in ready if r is not None]
        last = max(done) if done and len(done) == len(ready) and self.up_at else end
        return self.down_at, last

    def report(self, back: list[Back]) -> dict[str, Any]:
        """From each watched edge's :data:`Back` times."""
        if self.down_at is None:
            return {}
        if self.up_at is None:
            return {"restart_replica": self.replica, "restart_error": self.error,
                    "restart_all_back_s": None, "restart_edges_not_back": len(back)}
        up, started = self.up_at, self.started_at or self.down_at
        done = [r for r in self.ready(back) if r is not None]
        all_back = done and len(done) == len(back)
        return {"restart_replica": self.replica, "restart_edges": len(back),
                "restart_down_s": round(up - self.down_at, 1),
                "restart_ping_s": round(up - started, 1),
                "restart_all_back_s": round(max(done) - up, 1) if all_back else None,
                "restart_all_back_since_kill_s": (round(max(done) - self.down_at, 1)
                                                  if all_back else None),
                "restart_edges_not_back": len(back) - len(done),
                "restart_edges_seen_down": sum(lost is not None for lost, *_ in back),
                "restart_writes_failed": sum(f is not None for *_, f, _ in back)}


def split_by_window(times: list[float], ms: list[float],
                    window: tuple[float, float] | None) -> tuple[list[float], list[float]]:
    """``(inside, outside)``: the latencies of the writes that overlapped the window (started
    before it closed and ended after it opened) and of the others."""
    if window is None:
        return [], list(ms)
    opened, closed = window
    inside, outside = [], []
    for at, took in zip(times, ms, strict=True):
        (inside if at <= closed and at + took / 1000 >= opened else outside).append(took)
    return inside, outside


def latency_report(results: list[dict[str, Any]],
                   window: tuple[float, float] | None) -> dict[str, Any]:
    """Write p50/p99 inside the restart window and outside it, and the window's length."""
    times = [t for r in results for key in ("write_at", "first_at") for t in r[key]]
    ms = [m for r in results for key in ("write_ms", "first_ms") for m in r[key]]
    inside, outside = split_by_window(times, ms, window)
    return {
        "write_p50_ms_outside_restart": pct(outside, 50),
        "write_p99_ms_outside_restart": pct(outside, 99),
        "writes_outside_restart": len(outside),
        **({"restart_window_s": round(window[1] - window[0], 1),
            "write_p50_ms_in_restart": pct(inside, 50),
            "write_p99_ms_in_restart": pct(inside, 99),
            "writes_in_restart": len(inside)} if window is not None else {}),
    }


def per_edge_report(edges: int, replicas: int, minutes: float, writes: int, cpu: list[float],
                    db_cpu: float | None, rss_mib: list[float],
                    client_rss_mib: float) -> dict[str, Any]:
    """What one edge costs: CPU-ms per edge per minute of load and per write, each replica's
    and PostgreSQL's, and MiB each replica and the edge processes hold per connected edge
    (``rss_mib``: each replica's growth from before the edges connected to after)."""
    shares = [len(range(r, edges, replicas)) for r in range(replicas)]

    def per_minute(cpu_s: float, n: int) -> float | None:
        return round(cpu_s * 1000 / n / minutes, 3) if n and minutes else None

    out: dict[str, Any] = {
        "config_store_cpu_ms_per_edge_minute": per_minute(sum(cpu), edges),
        "config_store_cpu_ms_per_edge_minute_per_replica": [
            per_minute(c, n) for c, n in zip(cpu, shares, strict=True)],
        "config_store_cpu_ms_per_write_per_replica": [
            round(c * 1000 / writes, 3) if writes else None for c in cpu],
        "config_store_kib_per_edge_per_replica": [
            round(m * 1024 / n, 1) if n else None for m, n in zip(rss_mib, shares, strict=True)],
        "fleet_client_kib_per_edge": round(client_rss_mib * 1024 / edges, 1),
    }
    if db_cpu is not None:
        out["postgres_cpu_ms_per_edge_minute"] = per_minute(db_cpu, edges)
    return out


def fleet_report(results: list[dict[str, Any]], ready: list[dict[str, Any]],
                  connect_s: float, elapsed: float, cpu: list[float], db_cpu: float | None,
                  sims_cpu: float, census: list[dict[str, list[int]]], restart: Restart,
                  args: argparse.Namespace) -> dict[str, Any]:
    """The load's figures from every edge process's ``results`` (``ready``: their logins
    and connections), the replicas' and PostgreSQL's CPU and the servers' ``census``."""
    def joined(key: str) -> list[float]:
        return [ms for r in results for ms in r[key]]

    writes, first, lag, due = (joined("write_ms"), joined("first_ms"), joined("lag_ms"),
                               joined("due_ms"))
    total = len(writes) + len(first)
    connected = [sum(col) for col in zip(*(r["connected_min"] for r in results), strict=True)]
    return {
        "writes": total, "errors": sum(r["errors"] for r in results),
        "retries": sum(r["retries"] for r in results),
        "missed_reports": sum(r["missed"] for r in results),
        "writes_due_per_s": round(args.edges / args.interval, 1),
        "writes_per_s": round(total / elapsed, 1), "duration_s": round(elapsed, 1),
        "write_p50_ms": pct(writes + first, 50), "write_p90_ms": pct(writes + first, 90),
        "write_p99_ms": pct(writes + first, 99),
        "write_max_ms": round(max(writes + first), 2) if total else None,
        "heartbeat_p99_ms": pct(writes, 99), "first_report_p99_ms": pct(first, 99),
        "lag_p99_ms": pct(lag, 99), "scheduled_to_written_p99_ms": pct(due, 99),
        "min_reports_per_edge": min(r["reports_min"] for r in results),
        "subscriptions_resumed": sum(r["resumed"] for r in results),
        **({"connected_edges": sum(r["connected_before"] for r in results),
            "connected_edges_per_replica": connected,
            "connected_edges_at_end": sum(r["connected_end"] for r in results),
            "all_connected_throughout": all(r["all_connected"] for r in results),
            "connection_samples": min(r["samples"] for r in results),
            "connect_s": round(connect_s, 1)} if args.connect else {}),
        "login_s": max(r["login_s"] for r in ready),
        "logins_tried_again": sum(r["logins_again"] for r in ready),
        **(census[0] if census else {}),
        "config_store_cpu_s": round(sum(cpu), 1),
        "config_store_cpu_s_per_replica": [round(c, 1) for c in cpu],
        "config_store_cpu_ms_per_write": round(sum(cpu) * 1000 / total, 2) if total else None,
        **({"postgres_cpu_s": round(db_cpu, 1), "postgres_cpu_ms_per_write":
            round(db_cpu * 1000 / total, 2) if total else None} if db_cpu is not None else {}),
        "fleet_client_cpu_s": round(sims_cpu, 1),
        "fleet_client_cpu_ms_per_write": round(sims_cpu * 1000 / total, 2) if total else None,
        **restart.report([b for r in results for b in r["back"]]),
    }
