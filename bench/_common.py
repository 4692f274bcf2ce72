"""Small helpers shared by the benchmarks: percentiles, checked responses, CPU accounting."""

from __future__ import annotations

import os
import statistics
from pathlib import Path

import requests

from tests.cluster_manager.stack import Stack


def pct(values: list[float], q: int) -> float | None:
    """The q-th percentile (inclusive method), rounded to 0.1; None without values."""
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 1)
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1], 1)


def ok(resp: requests.Response, *codes: int) -> requests.Response:
    """``resp`` if its status is one of ``codes``; otherwise raise with what came back."""
    if resp.status_code not in codes:
        raise RuntimeError(f"{resp.request.method} {resp.url}: {resp.status_code} {resp.text}")
    return resp


def cpu_seconds(pgid: int) -> float:
    """User + system CPU (own and reaped children's) of every process in a process group."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields[0] is the state; pgrp is field 5 of stat
            total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / tick


def stack_cpu(stack: Stack) -> dict[str, float]:
    """CPU seconds used so far by each service of ``stack``."""
    return {name: cpu_seconds(service.proc.pid) if service.proc else 0.0
            for name, service in (("config_store", stack.store), ("git_server", stack.git),
                                  ("cluster_manager", stack.manager))}
