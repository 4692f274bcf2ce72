"""Fleet values benchmark: a fleet deployment whose values read each cluster's metadata,
against the same deployment without placeholders; prints one JSON object.

Two measures, each for a *plain* fleet deployment (literal values) and a *templated* one
(the same values, their strings reading ``{{cluster.labels.*}}``, ``{{cluster.name}}``,
``{{cluster.namespace}}``, a default, a whole-labels reference, plus a customization and a
profile):

- ``expand``: the leader's pure expansion (``expand``) of the fleet deployment over N
  clusters in this process, ``--rounds`` times: ``cpu_ms_per_cluster`` of the first pass
  (every deployment to write) and of a steady pass (every deployment held, nothing to write:
  what each of the leader's passes costs);
- ``stack``: against the whole stack on free ports (N clusters loaded in bulk and
  commissioned first, so commissioning does not share the measurement), the fleet
  deployment created through the API; ``seconds_to_expand`` runs from that request until
  all N Edge deployments it owns exist, ``cpu_ms_per_cluster`` is each process's CPU over
  that span per cluster. The plain one is deleted (and its deployments gone) before the
  templated one is created.

Target (the issue's): the templated deployment costs no more than 2x the plain one, CPU
per cluster, for 1,000 clusters (the expansion's passes and the Cluster Manager's CPU in
the stack).

Usage: ``python bench/fleet_values.py [--clusters 1000] [--rounds 5] [--no-stack]``; quick
smoke run: ``--clusters 100``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import cpu_ms_per_op, exit_on_sigterm, ok, stack_cpu
from bench.preview import TIMEOUT, load_clusters
from fplus.cluster_manager.rollouts.fleet_expansion import expand
from fplus.config_store import uuids
from harness.central import import_chart
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import STATUS, Stack, start_stack

TARGETS = {"clusters": 1000, "ratio": 2.0}
CHART = "historian"
EVERY = {"matchLabels": {"fleet": "bench"}}
TEMPLATED = {
    "mqtt": {"host": "mqtt.{{cluster.labels.site}}.example", "port": 1883,
             "clientId": "{{cluster.name}}-historian", "tls": True},
    "historian": {"name": "{{cluster.name}}", "namespace": "{{cluster.namespace}}",
                  "site": "{{cluster.labels.site}}", "line": "{{cluster.labels.line:none}}",
                  "tags": ["{{cluster.labels.site}}", "plant", "historian"]},
    "labels": "{{cluster.labels}}",
    "tpl": "{{ .Release.Name }}-data",
    "resources": {"requests": {"cpu": "100m", "memory": "256Mi"},
                  "limits": {"cpu": "1", "memory": "1Gi"}},
    "retention": {"days": 30, "compress": True},
}
LAYERS = {"customizations": [{"selector": {"matchLabels": {"site": "s0"}},
                              "values": {"retention": {"days": 90}}}],
          "profiles": {"big": {"resources": {"limits": {"memory": "4Gi"}}}}}


def plain_values(values: Any) -> Any:
    """``values`` with every placeholder replaced by a literal of its size."""
    if isinstance(values, dict):
        return {k: plain_values(v) for k, v in values.items()}
    if isinstance(values, list):
        return [plain_values(v) for v in values]
    if isinstance(values, str):
        return values.replace("{{", "<").replace("}}", ">")
    return values


def bodies(chart: str) -> dict[str, dict[str, Any]]:
    """The plain and the templated fleet deployment of ``chart`` over every cluster."""
    base = {"chart": chart, "selector": EVERY}
    return {"plain": base | {"name": "plain", "values": plain_values(TEMPLATED),
                             **plain_values(LAYERS)},
            "templated": base | {"name": "templated", "values": TEMPLATED, **LAYERS}}


def configs(n: int) -> dict[str, Any]:
    """N cluster configurations as :func:`bench.preview.load_clusters` loads them (every
    fifth with a ``profile: big`` label)."""
    return {str(uuid.UUID(int=i + 1)): {
        "name": f"line-{i:05d}", "namespace": "fplus-edge",
        "labels": {"site": f"s{i % 7}", "fleet": "bench"}
        | ({"profile": "big"} if i % 5 == 0 else {})} for i in range(n)}


def expand_cpu(n: int, rounds: int) -> dict[str, dict[str, float]]:
    """CPU ms per cluster of the first and a steady expansion pass, per variant."""
    clusters, out = configs(n), {}
    for variant, body in bodies(str(uuid.UUID(int=0))).items():
        fleets = {str(uuid.uuid4()): body | {"createdAt": "2026-01-01"}}
        start = time.process_time()
        for _ in range(rounds):
            plan = expand(fleets, clusters, {})
        first = time.process_time() - start
        assert len(plan.writes) == n and not plan.failures, plan.failures
        held = {d.uuid: d.entry() for d, _ in plan.writes}
        start = time.process_time()
        for _ in range(rounds):
            steady = expand(fleets, clusters, held)
        assert not steady.writes
        out[variant] = {"first": round(first * 1000 / rounds / n, 4),
                        "steady": round((time.process_time() - start) * 1000 / rounds / n, 4)}
    return out


def _count(admin: Api, owner: str) -> int:
    params = {"fleetDeployment": json.dumps(owner)}
    return len(ok(admin.get(f"/v1/app/{uuids.App.EdgeDeployment}/search", params=params,
                            timeout=TIMEOUT), 200).json())


def _wait(what: str, done: Any, timeout: float) -> float:
    """Poll ``done`` every 0.2 s; the monotonic time it first held."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.2)
    return time.monotonic()


def stack_run(stack: Stack, n: int) -> dict[str, Any]:
    """Each variant created through the API and expanded on the stack's leader."""
    admin, manager = stack.admin, Api(stack.manager.url, ("admin", ADMIN_PASSWORD))
    load_clusters(stack.store.url, n)
    _wait("every cluster Ready", lambda: len(ok(admin.get(
        f"/v1/app/{STATUS}/search", params={"ready": "true"}, timeout=TIMEOUT),
        200).json()) >= n, max(120.0, n * 0.2))
    import_chart(manager, CHART)
    chart = ok(admin.post("/v2/object", json={"class": uuids.Class.HelmChart}),
               201).json()["uuid"]
    ok(admin.put(f"/v2/app/{uuids.App.HelmChartTemplate}/object/{chart}",
                 json={"chart": CHART, "values": {}}), 201, 204)
    out = {}
    for variant, body in bodies(chart).items():
        before, start = stack_cpu(stack), time.monotonic()
        fleet = ok(manager.post("/v1/fleet-deployment", json=body, timeout=TIMEOUT),
                   201).json()["uuid"]
        done = _wait(f"the {variant} expansion", lambda f=fleet: _count(admin, f) >= n,
                     max(300.0, n * 0.3))
        out[variant] = {"seconds_to_expand": round(done - start, 1),
                        "cpu_ms_per_cluster": cpu_ms_per_op(before, stack_cpu(stack), n)}
        ok(manager.delete(f"/v1/fleet-deployment/{fleet}", timeout=TIMEOUT), 202, 204)
        _wait(f"the {variant} deployments removed", lambda f=fleet: _count(admin, f) == 0,
              max(300.0, n * 0.3))
    return out


def ratio(result: dict[str, Any], *path: str) -> float:
    """templated / plain at ``path`` of ``result``."""
    def at(variant: str) -> float:
        found: Any = result[variant]
        for key in path:
            found = found[key]
        return float(found)
    return round(at("templated") / at("plain"), 2) if at("plain") else float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=TARGETS["clusters"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-stack", action="store_true",
                        help="only the in-process expansion")
    args = parser.parse_args()
    exit_on_sigterm()
    measured = expand_cpu(args.clusters, args.rounds)
    result: dict[str, Any] = {"clusters": args.clusters, "expand": measured, "ratios": {
        "expand_first": ratio(measured, "first"), "expand_steady": ratio(measured, "steady")}}
    if not args.no_stack:
        with tempfile.TemporaryDirectory(prefix="fplus-bench-values-") as tmp:
            stack = start_stack(Path(tmp))
            try:
                result["stack"] = stack_run(stack, args.clusters)
            finally:
                stack.stop()
        result["ratios"]["stack_cluster_manager"] = ratio(
            result["stack"], "cpu_ms_per_cluster", "cluster_manager")
    result["targets"] = TARGETS
    result["targets_met"] = (args.clusters >= TARGETS["clusters"] and not args.no_stack
                             and all(r <= TARGETS["ratio"]
                                     for r in result["ratios"].values()))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
