"""Fleet benchmark: N simulated Edge Sync agents stay connected to and report to the Config
Store (one, or ``--replicas`` on one PostgreSQL database); prints one JSON object.

Each simulated edge runs the real client code of Edge Sync (``bench._edge_sim``): a
notify/v2 WebSocket holding ``DeploymentSync``'s three subscriptions, opened before the load
and held through it (``--no-connect`` leaves them out), and a ``StatusReporter`` merge-PATCHing
its Edge cluster status entry through its own ``ConfigStoreClient`` (Bearer token): first
``hosts``, ``kubeseal_cert``, ``lastSeen`` and ``version``, then the heartbeat, every
``--interval`` seconds on its own phase (N / interval writes per second, spread evenly);
a failed write is retried after Edge Sync's back-off. The edges run in ``--edge-procs``
gevent processes (default: one per 12,500 edges), each bound to a loopback source address
of its own, at most ``--workers`` writes in flight per process; ``lag`` is how late a write
started against its schedule, ``scheduled_to_written`` adds the write time. The load ends
on time whatever the lag: writes due by then but never started are ``missed_reports``.

Each edge writes as a principal of its own by default, as real edges do (``op1sync/<name>``
in the Edge Sync group, holding ReadApp + WriteApp on its own status entry), loaded in bulk
through ``POST /load`` with bench-made argon2id hashes of the CHEAPEST profile (said in the
JSON: throwaway principals; the Config Stores keep their own default profile).
``--principals P`` shares P principals with argon2 passwords among the edges instead.

``--restart-at S`` (default: one interval and two seconds into the load; 0: none) kills one
replica (``kill -9``, the last) mid-load and starts it again on the same port and data:
its edges' WebSockets reconnect after Edge Sync's jittered delay, their failed writes are
retried, tokens persist. ``restart_ping_s`` is the time from starting the new process until
it answers ``/ping``; ``restart_all_back_s`` (from it answering) and
``restart_all_back_since_kill_s`` (from the kill) run until the last of its edges is
connected with every subscription answered again and has written again if a write of its
failed. Write latency is also given apart for the restart window (from the kill until every
edge of the replica is back; to the end of the load if one never is) and outside it. The
targets (``bench._fleet_report.TARGET``): ``/ping`` within 10 s, all back within 120 s of
the kill, write p99 under 50 ms outside the window.

Storage (``--database``, ``bench._storage``): SQLite by default; with PostgreSQL,
``--replicas N`` Config Stores share one database, edge ``i`` talking to replica ``i mod N``
(each on its own port), each allowed ``--connections`` sockets. The per-address cap is off
(``FPLUS_HTTP_CONNECTIONS_PER_IP=0``: the edges come from a few loopback addresses, as from
behind NATs). File descriptors: the bench raises its open-file limit (inherited by every
process it starts) to the hard limit, and the hard limit itself when permitted (root with
CAP_SYS_RESOURCE); each replica needs its share of the edges plus a margin, so a hard limit
of 20,000 takes three replicas for 50,000 edges (``nofile_*`` in the JSON).

Reported: CPU seconds of the Config Stores (per replica, per write), the throwaway
PostgreSQL server and the edge processes (``fleet_client_cpu_s``); what one edge costs, to
compare runs of different sizes (CPU-ms per edge per minute of load, per replica and of
PostgreSQL, and KiB each replica and the edge processes hold per connected edge);
``connected_edges`` is the fewest edges connected at once before the restart (sampled
every ``--sample-every`` s), ``connected_edges_at_end`` those connected at the end,
``server_sockets_per_replica`` the most established sockets each Config Store held.

Compared in the same run, ``--samples`` writes each, one at a time, after the fleet:
- naive: a fresh connection and HTTP Basic login per write (a simple script's agent);
- floor: the same merge patch straight into the storage, no HTTP, no auth
  (``bench._storage``).

Usage: ``python bench/fleet.py --edges 10000``; 50,000 connected edges on PostgreSQL:
``--edges 50000 --database postgres --replicas 3 --interval 300 --restart-at 60 --duration
200`` (a 30 s heartbeat would be 1,667 writes/s, several times what 2 cores sustain; 2
cores hold 15,000 edges at ``--interval 120`` within every target, see
``docs/benchmarks.md``); quick run: ``--edges 200 --interval 5 --duration 11``.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import cpu_seconds, exit_on_sigterm, pct, rss_mib
from bench._edges import (
    EdgeProcess,
    edge_processes,
    established,
    raise_fd_limit,
    server_census,
)
from bench._fleet_report import (
    TARGET,
    Restart,
    fleet_report,
    latency_report,
    per_edge_report,
)
from bench._fleet_setup import PASSWORD_HASHES, owner, setup_fleet
from bench._storage import BenchStorage, add_database_arg, bench_storage
from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.edge_sync import __version__
from fplus.edge_sync.status import utc_now
from harness.servers import ADMIN_PASSWORD, ConfigStoreProcess, ServiceProcess

STATUS = uuids.App.EdgeClusterStatus


# -- the fleet ---------------------------------------------------------------------------
def _specs(stores: list[ServiceProcess], clusters: list[str], creds: list[tuple[str, str]],
           args: argparse.Namespace, procs: int) -> list[dict[str, Any]]:
    """What each edge process runs: edge ``i`` in process ``i mod procs``, on replica
    ``i mod replicas``, as principal ``owner(i)``, on phase ``i * interval / N``."""
    n, replicas = len(clusters), len(stores)
    owners = [owner(i, args.workers, len(creds)) for i in range(n)]
    return [{"source": f"127.0.0.{2 + k}", "urls": [s.url for s in stores],
             "edges": [(clusters[i], *creds[owners[i]], i % replicas)
                       for i in range(k, n, procs)],
             "phases": [i * args.interval / n for i in range(k, n, procs)],
             "interval": args.interval, "replicas": replicas, "connect": args.connect,
             "restart_replica": replicas - 1 if args.restart_at else None,
             "sample_every": args.sample_every, "concurrency": args.workers,
             "login_concurrency": 16,
             "wave": args.wave, "timeout": args.connect_timeout}
            for k in range(procs)]


def _run_fleet(stores: list[ServiceProcess], storage: BenchStorage, clusters: list[str],
               creds: list[tuple[str, str]], args: argparse.Namespace) -> dict[str, Any]:
    specs = _specs(stores, clusters, creds, args, args.edge_procs)
    sims = [EdgeProcess(spec) for spec in specs]
    stop, census, restart = threading.Event(), [], Restart(len(stores) - 1)
    try:
        started = time.monotonic()
        setup_cpu = [cpu_seconds(s.proc.pid) if s.proc else 0.0 for s in stores]
        setup_db = storage.server_cpu_seconds()
        rss_before = [rss_mib(s.proc.pid) if s.proc else 0.0 for s in stores]
        ready = [sim.receive()["ready"] for sim in sims]
        connect_s = time.monotonic() - started
        rss = [(rss_mib(s.proc.pid) if s.proc else 0.0) - b
               for s, b in zip(stores, rss_before, strict=True)]
        client_rss = sum(rss_mib(sim.proc.pid) for sim in sims)
        connect_cpu = {"config_stores": sum(cpu_seconds(s.proc.pid) if s.proc else 0.0
                                            for s in stores) - sum(setup_cpu),
                       "edges": sum(r["cpu_s"] for r in ready)}
        if setup_db is not None:
            connect_cpu["postgres"] = (storage.server_cpu_seconds() or 0.0) - setup_db
        t0 = time.monotonic() + 1.0
        end = t0 + args.duration
        clock = {"t0": t0, "end": end,
                 "restart_at": t0 + args.restart_at if args.restart_at else None}
        restarter = threading.Thread(target=restart.run, args=(stores, t0 + args.restart_at,
                                                               stop), daemon=True)
        watcher = threading.Thread(target=lambda: census.append(server_census(
            lambda: [(s.port, s.proc.pid if s.proc and s.proc.poll() is None else None)
                     for s in stores], stop, args.sample_every)), daemon=True)
        cpu_before = [cpu_seconds(s.proc.pid) if s.proc else 0.0 for s in stores]
        sims_before = [cpu_seconds(sim.proc.pid) for sim in sims]
        db_before = storage.server_cpu_seconds()
        for sim in sims:
            sim.go(clock)
        watcher.start()
        if args.restart_at:
            restarter.start()
        results, sims_cpu = [], 0.0
        for sim, before in zip(sims, sims_before, strict=True):
            results.append(sim.receive())
            sims_cpu += cpu_seconds(sim.proc.pid) - before
        elapsed = time.monotonic() - t0
        cpu = [cpu_seconds(s.proc.pid) - b if s.proc else 0.0
               for s, b in zip(stores, cpu_before, strict=True)]
        if restart.down_at is not None:  # the killed process's share, and the new one's
            cpu[restart.replica] += restart.cpu_at_kill
        db_after = storage.server_cpu_seconds()
        db_cpu = db_after - db_before if db_after is not None and db_before is not None else None
        stop.set()
        watcher.join()
        if args.restart_at:
            restarter.join()
    finally:
        stop.set()
        for sim in sims:
            sim.stop()
    back = [b for r in results for b in r["back"]]
    total = sum(len(r["write_ms"]) + len(r["first_ms"]) for r in results)
    return {**fleet_report(results, ready, connect_s, elapsed, cpu, db_cpu, sims_cpu, census,
                            restart, args),
            **latency_report(results, restart.window(back, t0 + elapsed)),
            **per_edge_report(args.edges, len(stores), elapsed / 60, total, cpu, db_cpu, rss,
                              client_rss),
            "login_and_connect_cpu_s": {k: round(v, 1) for k, v in connect_cpu.items()}}


# -- comparisons -------------------------------------------------------------------------
def _quiet(store: ServiceProcess, timeout: float = 120.0) -> None:
    """Wait until ``store`` holds (almost) no connection and its CPU rests: the fleet's
    WebSockets closing cost it CPU that is not the naive writes'."""
    deadline = time.monotonic() + timeout
    last = cpu_seconds(store.proc.pid) if store.proc else 0.0
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = cpu_seconds(store.proc.pid) if store.proc else 0.0
        if established([store.port])[0] < 10 and now - last < 0.05:
            return
        last = now


def _naive(store: ConfigStoreProcess, clusters: list[str], creds: list[tuple[str, str]],
           samples: int) -> dict[str, Any]:
    """One at a time, after the fleet: a fresh connection and Basic login per write."""
    out = []
    cpu_before = cpu_seconds(store.proc.pid)
    for i in range(samples):
        name, password = creds[i % len(creds)]
        basic = base64.b64encode(f"{name}:{password}".encode()).decode()
        body = json.dumps({"lastSeen": utc_now(), "version": __version__}).encode()
        start = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", store.port, timeout=30)
        # edge i % P is owned by principal i % P (see owner())
        conn.request("PATCH", f"/v2/app/{STATUS}/object/{clusters[i % len(creds)]}", body,
                     {"Authorization": f"Basic {basic}",
                      "Content-Type": "application/merge-patch+json"})
        status = conn.getresponse().status
        conn.close()
        if status != 204:
            raise RuntimeError(f"naive write answered {status}")
        out.append((time.perf_counter() - start) * 1000)
    cpu = cpu_seconds(store.proc.pid) - cpu_before
    return {"naive_write_p50_ms": pct(out, 50), "naive_write_p99_ms": pct(out, 99),
            "naive_config_store_cpu_ms_per_write": round(cpu * 1000 / samples, 2)}


def _floor(storage: BenchStorage, samples: int) -> list[float]:
    """Milliseconds per merge patch straight into the storage (``bench._storage``): no
    HTTP, no auth."""
    with tempfile.TemporaryDirectory(prefix="bench-fleet-floor-") as tmp, \
            storage.floor(Path(tmp)) as floor:
        app, obj = str(uuid.uuid4()), str(uuid.uuid4())
        out = []
        for _ in range(samples):
            start = time.perf_counter()
            floor.patch(app, obj, {"lastSeen": utc_now(), "version": __version__})
            out.append((time.perf_counter() - start) * 1000)
    return out


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edges", type=int, default=TARGET["edges"])
    parser.add_argument("--interval", type=float, default=30.0,
                        help="seconds between one edge's reports (Edge Sync's heartbeat)")
    parser.add_argument("--duration", type=float,
                        help="seconds of load (default: 2 * interval + 5)")
    parser.add_argument("--principals", type=int,
                        help="principals the edges share (default: one per edge, as real "
                             "edges; fewer: argon2 passwords, one login each)")
    parser.add_argument("--restart-at", type=float,
                        help="seconds into the load to kill -9 and restart one replica "
                             "(default: interval + 2; 0: no restart)")
    parser.add_argument("--workers", type=int, default=32,
                        help="writes in flight per edge process")
    parser.add_argument("--edge-procs", type=int,
                        help="processes simulating the edges (default: one per 12,500 "
                             "edges, within the open-file limit)")
    parser.add_argument("--wave", type=int, default=500,
                        help="WebSockets each edge process opens at once")
    parser.add_argument("--connect-timeout", type=float, default=300.0,
                        help="seconds a wave of WebSockets may take to be subscribed")
    parser.add_argument("--samples", type=int, default=200,
                        help="writes timed for the naive and floor comparisons")
    parser.add_argument("--replicas", type=int, default=1,
                        help="Config Stores on one PostgreSQL database")
    parser.add_argument("--connections", type=int,
                        help="sockets each Config Store may hold (config-store serve "
                             "--connections; default: its share of the edges + 1000, "
                             "at least 2000)")
    parser.add_argument("--no-connect", dest="connect", action="store_false",
                        help="no notify/v2 connection per edge: reports only")
    parser.add_argument("--sample-every", type=float, default=5.0,
                        help="seconds between counts of the connected edges")
    parser.add_argument("--admit-password-rate", type=float,
                        help="the Config Stores' --admit-password-rate (default: 0, no limit, "
                             "when every edge has a principal of its own: their CHEAPEST "
                             "hashes check in microseconds, where the Config Stores' default "
                             "rate is for their own profile's; else that default, 8 a second "
                             "on 2 CPUs)")
    add_database_arg(parser)
    args = parser.parse_args()
    args.principals = args.principals or args.edges
    if args.admit_password_rate is None:
        args.admit_password_rate = 0.0 if args.principals == args.edges else 8.0
    if args.restart_at is None:
        args.restart_at = args.interval + 2
    if min(args.edges, args.principals, args.workers, args.replicas) < 1 \
            or args.interval <= 0 or args.sample_every <= 0:
        parser.error("--edges, --principals, --workers and --replicas must be ≥ 1, "
                     "--interval and --sample-every > 0")
    if args.replicas > 1 and args.database == "sqlite":
        parser.error("--replicas > 1 needs PostgreSQL: --database postgres or a URL")
    args.parser = parser
    # with a restart: long enough for every edge to be back within the target
    args.duration = args.duration or (args.restart_at + TARGET["restart_all_back_s"] + 5
                                      if args.restart_at else 2 * args.interval + 5)
    args.principals = min(args.principals, args.edges)
    if args.edge_procs is not None and not 1 <= args.edge_procs <= 250:
        parser.error("--edge-procs must be 1 to 250 (one loopback address each)")
    args.connections = args.connections or max(2000, -(-args.edges // args.replicas) + 1000)
    return args


def _fd_limit(args: argparse.Namespace) -> dict[str, Any]:
    """Raise the open-file limit for the bench and the processes it starts; choose the
    edge processes; SystemExit naming the fix when a replica's share cannot fit."""
    per_replica = args.connections + 500  # its sockets, PostgreSQL's, files, the listener
    limit = raise_fd_limit(per_replica)
    if per_replica > limit.soft:
        fewest = -(-args.edges // (limit.soft - 1500))
        raise SystemExit(
            f"each replica may hold {args.connections} connections (its share of "
            f"{args.edges} edges and a margin) but the open-file limit is {limit.soft}, "
            f"and raising the hard limit needs root with CAP_SYS_RESOURCE: use "
            f"--database postgres --replicas {fewest} or more, or fewer edges")
    args.edge_procs = args.edge_procs or edge_processes(args.edges, limit.soft, args.workers)
    return limit.report()


def targets_met(fleet: dict[str, Any], edges: int) -> dict[str, bool | None]:
    """Each of :data:`TARGET` met, or None when the run did not measure it (no restart)."""
    def below(key: str, value: Any) -> bool | None:
        if key not in fleet:
            return None
        return fleet[key] is not None and fleet[key] <= value

    p99 = fleet["write_p99_ms_outside_restart"]
    return {
        "edges": (fleet.get("connected_edges", 0) >= TARGET["edges"]
                  and fleet.get("connected_edges_at_end", 0) >= TARGET["edges"]),
        "every_edge_connected_before_and_after": (
            fleet.get("connected_edges") == edges
            and fleet.get("connected_edges_at_end") == edges),
        "write_p99_ms_outside_restart": (p99 is not None
                                         and p99 < TARGET["write_p99_ms_outside_restart"]),
        "restart_ping_s": below("restart_ping_s", TARGET["restart_ping_s"]),
        "restart_all_back_s": below("restart_all_back_since_kill_s",
                                    TARGET["restart_all_back_s"]),
    }


def main() -> None:
    args = _args()
    exit_on_sigterm()
    fds = _fd_limit(args)
    per_principal = -(-args.edges // args.principals)
    serve_args = ("--admit-password-rate", str(args.admit_password_rate),
                  "--connections", str(args.connections),
                  "--notify-max-connections", str(max(256, per_principal + 1)),
                  "--notify-max-principal-subscriptions", str(max(10_000, per_principal * 10)))
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp, \
            bench_storage(args.parser, args.database) as storage:
        stores = storage.config_stores(Path(tmp), args.replicas, serve_args,
                                       {"FPLUS_HTTP_CONNECTIONS_PER_IP": "0"})
        try:
            started = time.monotonic()
            with ConfigStoreClient(stores[0].url, "admin", ADMIN_PASSWORD) as admin:
                clusters, creds = setup_fleet(admin, args.edges, args.principals, args.workers, 8)
            setup_s = time.monotonic() - started
            fleet = _run_fleet(stores, storage, clusters, creds, args)
            if args.samples:  # once the edges' sessions are closed: not counted in naive's
                _quiet(stores[0])
            naive = _naive(stores[0], clusters, creds, args.samples) if args.samples else {}
        finally:
            for store in stores:
                store.stop()
        floor = _floor(storage, args.samples)
    print(json.dumps({
        **storage.describe(), "replicas": args.replicas,
        "connections_per_replica": args.connections,
        "edges": args.edges, "interval_s": args.interval, "principals": args.principals,
        "admit_password_rate": args.admit_password_rate,
        "principal_passwords": (PASSWORD_HASHES if args.principals == args.edges
                                else "argon2id, the Config Stores' profile"),
        "edge_procs": args.edge_procs, "workers_per_edge_proc": args.workers,
        "source_addresses": [f"127.0.0.{2 + k}" for k in range(args.edge_procs)],
        **fds, **fleet,
        **naive,
        "floor_write_p50_ms": pct(floor, 50), "floor_write_p99_ms": pct(floor, 99),
        "setup_s": round(setup_s, 1), "cpus": os.cpu_count(),
        "target": TARGET,
        "targets_met": targets_met(fleet, args.edges),
    }))


if __name__ == "__main__":
    main()
