"""Preview benchmark: a change to N clusters previewed (``?dryRun``) through the Cluster
Manager's HTTP API; prints one JSON object.

Against the whole stack on free ports: N labelled cluster entries are loaded into the Config
Store in bulk (``POST /load``, as ``fleet_list.py`` loads its fleet) and commissioned by the
Cluster Manager (all Ready first, so commissioning does not share the measurement); a Flux
version and a chart are imported, and one fleet deployment of that chart selecting every
cluster is created and expanded. Then, each ``--rounds`` times (median):

- ``rollout_s``: ``POST /v1/rollout?dryRun`` of a ``fluxVersion`` change to every cluster
  (each cluster's repo rendered before and after, diffed; the step plan);
- ``fleet_patch_s``: ``PATCH /v1/fleet-deployment/:f?dryRun`` changing its values (every
  cluster's Edge deployment entry before and after, with the resolved values, diffed);
- ``fleet_create_s``: ``POST /v1/fleet-deployment?dryRun`` of a second deployment of the
  chart over every cluster;

with the CPU each process spent per preview (``cpu_ms_per_preview``). Each answer is checked:
N clusters, none refused, nothing written.

Target (the issue's): the answer for 1,000 clusters in under 10 s on this machine.

Usage: ``python bench/preview.py [--clusters 1000] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import cpu_ms_per_op, exit_on_sigterm, ok, stack_cpu
from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from harness.central import import_chart, import_flux
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import CONFIG, STATUS, Stack, start_stack

TARGETS = {"clusters": 1000, "preview_s": 10.0}
CHUNK = 500
"""Cluster entries per load (one transaction each; within the default 1 MiB body limit)."""
FLUX_VERSION = "v2.8.0"
CHART = "historian"
TIMEOUT = 120.0


def load_clusters(store_url: str, n: int) -> list[str]:
    """N cluster configuration entries (``site: s<i % 7>``), :data:`CHUNK` at a time."""
    admin = ConfigStoreClient(store_url, "admin", ADMIN_PASSWORD, timeout=TIMEOUT)
    clusters = [str(uuid.uuid4()) for _ in range(n)]
    for start in range(0, n, CHUNK):
        chunk = clusters[start:start + CHUNK]
        admin.load_dump({"service": uuids.Service.ConfigDB, "version": 2,
                         "objects": {uuids.Class.EdgeCluster: dict.fromkeys(chunk)},
                         "configs": {CONFIG: {c: {
                             "name": f"line-{start + i:05d}", "namespace": "fplus-edge",
                             "labels": {"site": f"s{(start + i) % 7}", "fleet": "bench"}}
                             for i, c in enumerate(chunk)}}})
    return clusters


def _count(admin: Api, app: str, query: dict[str, Any]) -> int:
    """How many of ``app``'s entries hold ``query``'s values (a ConfigDB search)."""
    params = {path: json.dumps(value) for path, value in query.items()}
    return len(ok(admin.get(f"/v1/app/{app}/search", params=params, timeout=TIMEOUT),
                  200).json())


def _wait(what: str, done: Callable[[], bool], timeout: float) -> None:
    """Poll ``done`` every 0.5 s until it holds."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.5)


def _chart_template(admin: Api) -> str:
    chart = ok(admin.post("/v2/object", json={"class": uuids.Class.HelmChart}),
               201).json()["uuid"]
    ok(admin.put(f"/v2/app/{uuids.App.HelmChartTemplate}/object/{chart}",
                 json={"chart": CHART, "values": {"replicas": 1}}), 201, 204)
    return chart


def _checked(resp: requests.Response, n: int) -> dict[str, Any]:
    """The preview answer, if it names N clusters and refuses none."""
    found: dict[str, Any] = ok(resp, 200).json()
    assert found["dryRun"] is True and len(found["clusters"]) == n, len(found["clusters"])
    assert found["refused"] == [], found["refused"][:3]
    return found


def _stored(admin: Api) -> tuple[int, ...]:
    """What a preview must not change: the rollouts, fleet deployments and Edge deployments
    stored."""
    return tuple(len(ok(admin.get(f"/v1/app/{app}/object"), 200).json()) for app in (
        uuids.App.ClusterRollout, uuids.App.FleetDeployment, uuids.App.EdgeDeployment))


def _timed(stack: Stack, rounds: int, preview: Callable[[], requests.Response],
           n: int) -> dict[str, Any]:
    """Median wall seconds of ``rounds`` previews, CPU per preview, the size of an answer."""
    times, answer = [], {}
    before = stack_cpu(stack)
    for _ in range(rounds):
        start = time.perf_counter()
        resp = preview()
        times.append(time.perf_counter() - start)
        answer = _checked(resp, n)
    return {"s": round(statistics.median(times), 2),
            "cpu_ms_per_preview": cpu_ms_per_op(before, stack_cpu(stack), rounds),
            "answer_kb": round(len(json.dumps(answer)) / 1024),
            "omitted_lines": sum(c["omitted"] for c in answer["clusters"])}


def run(stack: Stack, n: int, rounds: int) -> dict[str, Any]:
    admin, manager = stack.admin, Api(stack.manager.url, ("admin", ADMIN_PASSWORD))
    start = time.monotonic()
    load_clusters(stack.store.url, n)
    _wait("every cluster Ready", lambda: _count(admin, STATUS, {"ready": True}) >= n,
          max(120.0, n * 0.2))
    commissioned = time.monotonic() - start
    import_flux(manager, FLUX_VERSION)
    import_chart(manager, CHART)
    chart = _chart_template(admin)
    every = {"matchLabels": {"fleet": "bench"}}
    fleet = ok(manager.post("/v1/fleet-deployment", json={
        "name": CHART, "chart": chart, "selector": every, "values": {"colour": "blue"}},
        timeout=TIMEOUT), 201).json()["uuid"]
    _wait("the expansion", lambda: _count(admin, uuids.App.EdgeDeployment, {
        "fleetDeployment": fleet}) >= n, max(120.0, n * 0.2))
    stored = _stored(admin)

    rollout = _timed(stack, rounds, lambda: manager.post("/v1/rollout?dryRun", json={
        "name": "flux-up", "change": {"fluxVersion": FLUX_VERSION},
        "selector": {"matchLabels": {"fleet": "bench"}},
        "rollout": {"steps": [{"clusters": 1}, {"clusters": "10%"}], "offline": "skip"}},
        timeout=TIMEOUT), n)
    patch = _timed(stack, rounds, lambda: manager.patch(
        f"/v1/fleet-deployment/{fleet}?dryRun", json={
        "values": {"colour": "green"}, "rollout": {"steps": [{"clusters": 1}]}},
        headers={"Content-Type": "application/merge-patch+json"}, timeout=TIMEOUT), n)
    create = _timed(stack, rounds, lambda: manager.post("/v1/fleet-deployment?dryRun", json={
        "name": "second", "chart": chart, "selector": every}, timeout=TIMEOUT), n)
    assert _stored(admin) == stored, "a preview wrote something"
    return {"clusters": n, "rounds": rounds, "setup_s": round(commissioned, 1),
            "rollout_s": rollout.pop("s"), "rollout": rollout,
            "fleet_patch_s": patch.pop("s"), "fleet_patch": patch,
            "fleet_create_s": create.pop("s"), "fleet_create": create}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=TARGETS["clusters"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    exit_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="fplus-bench-preview-") as tmp:
        stack = start_stack(Path(tmp))
        try:
            result = run(stack, args.clusters, args.rounds)
        finally:
            stack.stop()
    result["targets"] = TARGETS
    result["targets_met"] = args.clusters >= TARGETS["clusters"] and all(
        result[k] < TARGETS["preview_s"] for k in ("rollout_s", "fleet_patch_s",
                                                   "fleet_create_s"))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
