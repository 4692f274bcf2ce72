"""Bootstrap benchmark: time to serve a bootstrap script; prints one JSON object.

Against the whole stack with one commissioned cluster, ``--fetches`` times: ask for a
bootstrap URL (POST, not timed in ``get_*``; ``url_p50_ms``), then GET the script with its
one-time token — which checks and spends the token, reads the setup status and the Bootstrap
script entry, rotates the two edge credentials, renders and packs the script →
``get_p50_ms``/``get_p99_ms``. The naive comparison (what ACS does per request): a fresh
``git clone --depth 1`` of the cluster's repo before rendering → ``naive_get_p50_ms`` is our
GET plus the clone, measured the same way. ``floor_ms``: packing the script alone in-process.
``cpu_ms_per_op``: CPU each service spent per fetch (the URL and the script's GET).

Usage: ``python bench/bootstrap.py [--fetches 200] [--naive-fetches 20]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import cpu_ms_per_op, ok, pct, stack_cpu
from fplus import bootstrap, manifests
from fplus.templating import render
from harness.gitcli import GIT_ENV
from harness.servers import Api
from harness.stack import create_cluster, start_stack, status, wait_for

TARGETS = {"get_p50_ms": 3, "cpu_ms_per_op": 3}
"""GET p50, and CPU per URL + GET summed over every process of the stack."""


def _fetch(manager: Api, cluster: str) -> tuple[float, float, str]:
    """(ms to get a URL, ms to GET the script, script)."""
    t0 = time.perf_counter()
    url = ok(manager.post(f"/v1/cluster/{cluster}/bootstrap-url"), 200).json()
    t1 = time.perf_counter()
    script = ok(manager.get(url.removeprefix(manager.base)), 200).text
    t2 = time.perf_counter()
    return (t1 - t0) * 1000, (t2 - t1) * 1000, script


def _clone_ms(git_port: int, cluster: str, work: Path, i: int) -> float:
    url = f"http://admin:{os.environ.get('BENCH_ADMIN', '')}@127.0.0.1:{git_port}/uuid/{cluster}"
    start = time.perf_counter()
    subprocess.run(["git", "clone", "-q", "--depth", "1", url, str(work / f"clone-{i}")],
                   env=os.environ | GIT_ENV, capture_output=True, check=True)
    return (time.perf_counter() - start) * 1000


def _floor_ms(self_link: str, n: int = 200) -> float:
    entry = manifests.load("bootstrap-script")
    context = {"uuid": "c", "name": "n", "namespace": "ns", "files": bootstrap.PLACEHOLDER,
               "timeout": "300s", "flux": {"version": "2.7.5", "install_url": "u",
                                           "secret": "s"},
               "edge_sync": {"credentials_secret": "e"}}
    credentials = bootstrap.credentials_manifest("ns", {"a": ("u", "p"), "b": ("u", "p")})
    start = time.perf_counter()
    for _ in range(n):
        bootstrap.build_script(render(entry, context), {"self-link.yaml": self_link,
                                                       "credentials.yaml": credentials})
    return (time.perf_counter() - start) * 1000 / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fetches", type=int, default=200)
    parser.add_argument("--naive-fetches", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-bootstrap-") as tmp:
        stack = start_stack(Path(tmp) / "stack")
        try:
            cluster = create_cluster(stack.admin, "bootstrap-bench")
            setup = wait_for(lambda: (s := status(stack.admin, cluster)) and s.get("ready")
                             and s, 60, "cluster ready")
            manager = Api(stack.manager.url, stack.admin.auth)
            for _ in range(5):  # warm up: logins cached, connections open
                _fetch(manager, cluster)
            urls, gets = [], []
            cpu_before = stack_cpu(stack)
            for _ in range(args.fetches):
                url_ms, get_ms, script = _fetch(manager, cluster)
                urls.append(url_ms)
                gets.append(get_ms)
            cpu_after = stack_cpu(stack)
            os.environ["BENCH_ADMIN"] = stack.admin.auth[1]
            naive = [_fetch(manager, cluster)[1] + _clone_ms(stack.git.port, cluster,
                                                             Path(tmp), i)
                     for i in range(args.naive_fetches)]
        finally:
            stack.stop()
    get_p50 = pct(gets, 50)
    cpu = cpu_ms_per_op(cpu_before, cpu_after, args.fetches)
    cpu_all = round(sum(v or 0 for v in cpu.values()), 2)
    result = {
        "fetches": args.fetches, "script_bytes": len(script),
        "get_p50_ms": get_p50, "get_p99_ms": pct(gets, 99),
        "url_p50_ms": pct(urls, 50),
        "naive_get_p50_ms": pct(naive, 50), "naive_fetches": args.naive_fetches,
        "floor_ms": round(_floor_ms(setup["self_link"]), 3),
        "cpu_ms_per_op": cpu,
        "cpu_ms_per_op_all": cpu_all,
        "cpus": os.cpu_count(),
        "targets": TARGETS,
        "targets_met": {"get_p50_ms": get_p50 is not None and get_p50 < TARGETS["get_p50_ms"],
                        "cpu_ms_per_op": cpu_all <= TARGETS["cpu_ms_per_op"]},
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
