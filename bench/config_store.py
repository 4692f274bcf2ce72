"""Config Store benchmark: PATCH and GET throughput, notify latency; prints one JSON object.

Compares, in the same run:
- ours: keep-alive clients with Bearer tokens against ``config-store serve`` on the storage
  ``--database`` names (SQLite by default, or PostgreSQL: see ``bench._storage``);
- naive: a fresh connection and Basic login per request (what a simple script does);
- floor: the same merge-patch writes straight into that storage (SQLite set up as the
  Config Store's: WAL, one transaction each; or a PostgreSQL table), no HTTP, no auth.

CPU per PATCH and per GET is the Config Store's process CPU (and the throwaway PostgreSQL
server's, all its backends) over the phase, divided by the requests served.

Usage: ``python bench/config_store.py [--seconds 5] [--clients 8] [--subscribers 100]
[--database sqlite|postgres|postgresql://…]``
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import cpu_seconds, exit_on_sigterm
from bench._notify_fanout import notify_latency
from bench._storage import BenchStorage, add_database_arg, bench_storage
from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, ServiceProcess

MERGE = "application/merge-patch+json"


def _conn(port: int) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", port, timeout=30)


def _call(conn: http.client.HTTPConnection, method: str, path: str, headers: dict,
          body: bytes | None = None) -> tuple[int, bytes]:
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.read()


def _basic() -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(
        f"admin:{ADMIN_PASSWORD}".encode()).decode()}


def _bearer(port: int) -> dict[str, str]:
    status, body = _call(_conn(port), "POST", "/token", _basic())
    assert status == 200
    return {"Authorization": "Bearer " + json.loads(body)["token"]}


def _setup(port: int, n_objects: int) -> tuple[str, list[str]]:
    conn, auth = _conn(port), _basic() | {"Content-Type": "application/json"}

    def create(klass: str) -> str:
        body_in = json.dumps({"class": klass}).encode()
        status, body = _call(conn, "POST", "/v2/object", auth, body_in)
        assert status == 201, body
        return json.loads(body)["uuid"]

    app = create(uuids.Class.App)
    objs = [create(uuids.Class.Device) for _ in range(n_objects)]
    for obj in objs:
        _call(conn, "PUT", f"/v2/app/{app}/object/{obj}", auth, b'{"n": 0}')
    return app, objs


def _rate(port: int, seconds: float, clients: int, make_request, fresh: bool = False) -> float:
    """Requests per second over ``clients`` threads issuing ``make_request(i, n)``."""
    stop = time.monotonic() + seconds
    counts = [0] * clients
    errors: list[int] = []

    def worker(i: int) -> None:
        conn = _conn(port)
        n = 0
        while time.monotonic() < stop:
            if fresh:
                conn.close()
                conn = _conn(port)
            method, path, headers, body = make_request(i, n)
            status, _ = _call(conn, method, path, headers, body)
            if status >= 300:
                errors.append(status)
            n += 1
        counts[i] = n

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{len(errors)} failed requests, e.g. {errors[:3]}")
    return sum(counts) / (time.monotonic() - start)


def _notify(server: ServiceProcess, app: str, obj: str,
            args: argparse.Namespace) -> dict[str, Any]:
    """Notify fan-out (``bench._notify_fanout``): latency from a PATCH's start to each
    subscriber's reading of its update, and CPU per write fanned out to every subscriber."""
    assert server.proc is not None
    conn, headers = _conn(server.port), _bearer(server.port) | {"Content-Type": MERGE}

    def write(seq: int) -> None:
        status, _ = _call(conn, "PATCH", f"/v2/app/{app}/object/{obj}", headers,
                          json.dumps({"seq": seq}).encode())
        assert status == 204

    token = _bearer(server.port)["Authorization"].split(" ", 1)[1]
    before = cpu_seconds(server.proc.pid)
    samples, bench_ms = notify_latency(server.port, token, f"v2/app/{app}/object/{obj}",
                                       args.subscribers, args.writes, write)
    store_ms = (cpu_seconds(server.proc.pid) - before) * 1000 / args.writes
    return {"samples": samples,
            "cpu_ms_per_write": {"config_store": round(store_ms, 2),
                                 "bench_subscribers": round(bench_ms, 2)}}


def _floor_patch_rate(storage: BenchStorage, seconds: float) -> float:
    """Merge-patch writes per second straight into the storage (see ``bench._storage``):
    what storage alone costs, no HTTP, no auth."""
    with tempfile.TemporaryDirectory(prefix="bench-cs-floor-") as tmp, \
            storage.floor(Path(tmp)) as floor:
        app, obj = str(uuid.uuid4()), str(uuid.uuid4())
        n, stop = 0, time.monotonic() + seconds
        start = time.monotonic()
        while time.monotonic() < stop:
            floor.patch(app, obj, {"n": n})
            n += 1
        return n / (time.monotonic() - start)


def _with_cpu(server: ServiceProcess, storage: BenchStorage,
              phase: Callable[[], float], seconds: float) -> tuple[float, dict[str, Any]]:
    """``phase()``'s rate and the CPU milliseconds per request it cost the Config Store
    (and PostgreSQL, when it is ours)."""
    assert server.proc is not None
    store_before, db_before = cpu_seconds(server.proc.pid), storage.server_cpu_seconds()
    rate = phase()
    requests = rate * seconds
    cpu = {"config_store": (cpu_seconds(server.proc.pid) - store_before) * 1000 / requests}
    db_after = storage.server_cpu_seconds()
    if db_before is not None and db_after is not None:
        cpu["postgres"] = (db_after - db_before) * 1000 / requests
    return rate, {k: round(v, 2) for k, v in cpu.items()}


def _pct(values: list[float], q: float) -> float:
    return round(statistics.quantiles(values, n=100)[int(q) - 1], 2) if len(values) > 1 else 0.0


def _run(storage: BenchStorage, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    server = storage.config_stores(root, 1)[0]
    try:
        app, objs = _setup(server.port, args.clients)
        bearer = _bearer(server.port)
        patch_headers = bearer | {"Content-Type": MERGE}

        def patch(i: int, n: int):
            return "PATCH", f"/v2/app/{app}/object/{objs[i]}", patch_headers, \
                json.dumps({"n": n}).encode()

        def get(i: int, n: int):
            return "GET", f"/v2/app/{app}/object/{objs[i]}", bearer, None

        naive_headers = _basic() | {"Content-Type": MERGE}

        def naive_patch(i: int, n: int):
            return "PATCH", f"/v2/app/{app}/object/{objs[i]}", naive_headers, \
                json.dumps({"n": n}).encode()

        def rate(make_request, fresh: bool = False) -> Callable[[], float]:
            return lambda: _rate(server.port, args.seconds, args.clients, make_request, fresh)

        patch_rate, patch_cpu = _with_cpu(server, storage, rate(patch), args.seconds)
        get_rate, get_cpu = _with_cpu(server, storage, rate(get), args.seconds)
        naive_rate = rate(naive_patch, fresh=True)()
        notify = _notify(server, app, objs[0], args)
    finally:
        server.stop()
    floor_rate = _floor_patch_rate(storage, args.seconds)
    return {
        "patch_per_s": round(patch_rate, 1),
        "get_per_s": round(get_rate, 1),
        "naive_patch_per_s": round(naive_rate, 1),
        "floor_patch_per_s": round(floor_rate, 1),
        "ratio_vs_naive": round(patch_rate / naive_rate, 2),
        "cpu_ms_per_patch": patch_cpu,
        "cpu_ms_per_get": get_cpu,
        "subscribers": args.subscribers,
        "notify_samples": len(notify["samples"]),
        "notify_p50_ms": _pct(notify["samples"], 50),
        "notify_p99_ms": _pct(notify["samples"], 99),
        "cpu_ms_per_notify_write": notify["cpu_ms_per_write"],
    }


TARGETS = {"patch_per_s": 2000, "get_per_s": 3000, "notify_p99_ms": 20}
"""Performance round three (issue 38): at least, at least, under (100 subscribers)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--writes", type=int, default=50)
    add_database_arg(parser)
    args = parser.parse_args()
    exit_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="bench-cs-") as tmp, \
            bench_storage(parser, args.database) as storage:
        result = _run(storage, Path(tmp), args)
    print(json.dumps({
        **storage.describe(),
        "clients": args.clients,
        **result,
        "cpus": os.cpu_count(),
        "targets": TARGETS,
        "targets_met": {name: (result[name] >= bound if name.endswith("per_s")
                               else result[name] < bound)
                        for name, bound in TARGETS.items()},
    }))


if __name__ == "__main__":
    main()
