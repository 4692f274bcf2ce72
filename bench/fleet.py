"""Fleet benchmark: N simulated Edge Sync agents stay connected to and report to the Config
Store (one, or ``--replicas`` on one PostgreSQL database); prints one JSON object.

Each simulated edge is the real status path of Edge Sync: an ``edge_sync.status``
``StatusReporter`` (merge-PATCH of the Edge cluster status entry over HTTP, through the
Config Store client with its Bearer tokens and keep-alive pool). Its first report carries
``hosts`` (fake Node objects mapped by ``edge_sync.hosts``), ``kubeseal_cert``, ``lastSeen``
and ``version``; later ones the heartbeat (``lastSeen``). Every edge reports every
``--interval`` seconds on its own phase, so the aggregate rate is N / interval writes per
second, spread evenly. ``--workers`` threads fire the reports (each owns a slice of the
edges and its own schedule); ``lag`` is how late a report started against its schedule
(the workers bound the requests in flight, so a slow server shows as lag as well as write
time; ``scheduled_to_written`` adds both: what an independent edge would wait). The load
ends on time whatever the lag: reports due by then but never started are
``missed_reports``.

Edges write as ``--principals`` principals (argon2 logins are per principal, not per
write), each holding, per edge it serves, ReadApp + WriteApp on the Edge cluster status
restricted to that edge's object: the grants the Cluster Manager gives ``op1sync/<name>``.
A real edge's principal holds 2 grants; the Config Store's ACL check scans a principal's
grants, so few principals shared by many edges overstate it (16 principals for 10,000
edges: p99 ~80 ms; the default 128: ~20 ms).
The Config Store's CPU seconds are measured from /proc (its process group) during the run;
``fleet_client_cpu_s`` is this process's (the simulated edges share the machine with it).

Every edge also stays connected as Edge Sync does: a notify/v2 WebSocket holding Edge Sync's
subscriptions (``bench._edges``), opened before the load and held through it (``--no-connect``
leaves them out). Its principal is in the Edge Sync group, as the Cluster Manager puts
``op1sync/<name>``, so the subscriptions are answered with entries. ``connected_edges`` is
the fewest connected at once over the load (sampled every ``--sample-every`` s),
``server_sockets_per_replica`` the most established sockets a Config Store held.

Storage (``--database``, ``bench._storage``): SQLite by default; with PostgreSQL,
``--replicas N`` Config Stores share one database, edge ``i`` reports to and stays connected
to replica ``i mod N`` (through its principal), each allowed ``--connections`` sockets
(default: its share of the edges and a margin). The edges all come from 127.0.0.1, as from
behind one NAT, so the per-address cap is off (``FPLUS_HTTP_CONNECTIONS_PER_IP=0``). CPU is
reported per write for the Config Stores together and for the throwaway PostgreSQL server.

Compared in the same run, ``--samples`` writes each, one at a time, after the fleet:
- naive: a fresh connection and HTTP Basic login per write (a simple script's agent). Each
  costs the Config Store a password hash check (argon2, ~100 ms of a core, in a native
  thread), so it is not mixed into the fleet's load: its server CPU per write says what a
  fleet of such agents would cost;
- floor: the same merge patch straight into SQLite set up as the Config Store's storage
  (WAL, one transaction each), no HTTP, no auth (``bench._common.StorageFloor``).

Usage: ``python bench/fleet.py --edges 10000`` (default duration: every edge reports at
least twice); two replicas: ``--database postgres --replicas 2``; quick run: ``--edges 200
--interval 5 --duration 11``.
"""

from __future__ import annotations

import argparse
import base64
import heapq
import http.client
import json
import math
import os
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import cpu_seconds, exit_on_sigterm, pct
from bench._edges import Fleet, census, enough_fds
from bench._storage import BenchStorage, add_database_arg, bench_storage
from cluster_manager.reconcile.seeding import seed
from config_store import uuids
from config_store.client import ConfigStoreClient
from edge_sync import __version__
from edge_sync.hosts import hosts
from edge_sync.retry import Backoff
from edge_sync.status import StatusReporter, utc_now
from harness.certs import certificate
from harness.kube import node
from harness.servers import ADMIN_PASSWORD, ConfigStoreProcess, ServiceProcess

STATUS = uuids.App.EdgeClusterStatus
TARGET = {"edges": 10000, "write_p99_ms": 50}


@dataclass
class Edge:
    """One simulated agent."""

    uuid: str
    reporter: StatusReporter
    hosts: list[dict[str, Any]]
    reports: int = 0


@dataclass
class Samples:
    """What the workers measured (each worker appends to its own lists)."""

    write_ms: list[float] = field(default_factory=list)
    first_ms: list[float] = field(default_factory=list)
    lag_ms: list[float] = field(default_factory=list)
    due_ms: list[float] = field(default_factory=list)
    """Scheduled time → written: what an independent edge waits (lag + write)."""
    errors: int = 0
    missed: int = 0
    """Reports due before the end of the load that it never started (a server too slow)."""


# -- setup -------------------------------------------------------------------------------
def owner(i: int, workers: int, principals: int) -> int:
    """The principal edge ``i`` (run by worker ``i % workers``) writes as.

    Chosen so each principal's client serves as few workers as possible: its keep-alive
    pool then holds few connections (about ``max(workers, principals)`` in all, not
    ``workers * principals``). With ``principals`` a multiple of ``workers``, one each.
    """
    return i % principals if principals >= workers else (i % workers) % principals


def _setup(admin: ConfigStoreClient, n: int, principals: int, workers: int,
           threads: int) -> tuple[list[str], list[tuple[str, str]]]:
    """N Edge cluster objects, P principals in the Edge Sync group and 2N object-restricted
    grants."""
    sync_group = seed(admin)["group"]["sync"]["uuid"]
    clusters = [str(uuid.uuid4()) for _ in range(n)]
    for start in range(0, n, 2000):
        chunk = clusters[start:start + 2000]
        admin.load_dump({"service": uuids.Service.ConfigDB, "version": 2, "objects": {
            uuids.Class.EdgeCluster: {c: {"name": f"edge-{c[:8]}"} for c in chunk}}})
    creds = []
    for i in range(principals):
        name, password = f"op1sync/fleet-{i}", f"fleet-password-{i}"
        admin.create_principal(name, password, klass=uuids.Class.EdgeAccount)
        creds.append((name, password))
    ids = [admin.find_principal(name) for name, _ in creds]
    for principal in ids:
        admin.add_member(sync_group, principal)

    def grant(i: int) -> None:
        for perm in (uuids.ConfigDBPerm.ReadApp, uuids.ConfigDBPerm.WriteApp):
            admin.add_grant(ids[owner(i, workers, principals)], perm, STATUS, False,
                            clusters[i])

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(grant, range(n)))
    return clusters, creds


def _fake_hosts(i: int) -> list[dict[str, Any]]:
    nodes = [node(f"edge-{i}-{j}", control_plane=j == 0, arch="arm64" if i % 3 else "amd64")
             for j in range(1 + i % 3)]
    return hosts(nodes)


# -- the fleet ---------------------------------------------------------------------------
def _worker(edges: list[Edge], phases: list[float], t0: float, interval: float,
            end: float, cert: str, samples: Samples) -> None:
    queue = [(t0 + phase, i) for i, phase in enumerate(phases)]
    heapq.heapify(queue)
    while queue:
        due, i = heapq.heappop(queue)
        if due >= end:
            break
        if time.monotonic() >= end:  # the load is over, however far behind it fell
            samples.missed += sum(math.ceil((end - d) / interval)
                                  for d, _ in [(due, i), *queue] if d < end)
            break
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        edge = edges[i]
        first = edge.reports == 0
        samples.lag_ms.append(max(0.0, time.monotonic() - due) * 1000)
        if first:
            edge.reporter.update(hosts=edge.hosts, kubeseal_cert=cert)
        edge.reporter.update(lastSeen=utc_now(), version=__version__)
        result = edge.reporter.flush()
        samples.due_ms.append((time.monotonic() - due) * 1000)
        if result.ok:
            edge.reports += 1
            (samples.first_ms if first else samples.write_ms).append(result.seconds * 1000)
        else:
            samples.errors += 1
        heapq.heappush(queue, (due + interval, i))


def _run_fleet(stores: list[ServiceProcess], storage: BenchStorage, clusters: list[str],
               creds: list[tuple[str, str]], args: argparse.Namespace) -> dict[str, Any]:
    replicas = len(stores)
    clients = [ConfigStoreClient(stores[p % replicas].url, name, pw, retries=0)
               for p, (name, pw) in enumerate(creds)]
    for cs in clients:
        cs.token()  # one login per principal, before the clock starts
    owners = [owner(i, args.workers, len(clients)) for i in range(len(clusters))]
    fleet, stop, seen = Fleet(), threading.Event(), []
    try:
        connect_s = fleet.open(clusters, [clients[o] for o in owners],
                               [o % replicas for o in owners]) if args.connect else None
        backoff = Backoff(args.interval, args.interval)
        edges = [Edge(c, StatusReporter(clients[owners[i]], c, backoff=backoff), _fake_hosts(i))
                 for i, c in enumerate(clusters)]
        cert = certificate(0)
        n, w = len(edges), args.workers
        samples = [Samples() for _ in range(w)]
        t0 = time.monotonic() + 1.0
        end = t0 + args.duration
        threads = [threading.Thread(target=_worker, args=(
            edges[k::w], [(i * args.interval / n) for i in range(k, n, w)], t0, args.interval,
            end, cert, samples[k]), daemon=True) for k in range(w)]
        watcher = threading.Thread(target=lambda: seen.append(census(
            fleet, [(s.port, s.proc.pid) for s in stores if s.proc], stop, args.sample_every)))
        cpu_before = [cpu_seconds(s.proc.pid) for s in stores if s.proc]
        db_before, client_before = storage.server_cpu_seconds(), time.process_time()
        watcher.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - t0
        cpu = [cpu_seconds(s.proc.pid) - b for s, b in zip(stores, cpu_before, strict=True)
               if s.proc]
        db_after = storage.server_cpu_seconds()
        db_cpu = db_after - db_before if db_after is not None and db_before is not None else None
        client_cpu = time.process_time() - client_before
        stop.set()
        watcher.join()
    finally:
        stop.set()
        fleet.close()
        for cs in clients:
            cs.close()
    writes = [ms for s in samples for ms in s.write_ms]
    first = [ms for s in samples for ms in s.first_ms]
    lag = [ms for s in samples for ms in s.lag_ms]
    due = [ms for s in samples for ms in s.due_ms]
    total = len(writes) + len(first)
    return {
        "writes": total, "errors": sum(s.errors for s in samples),
        "missed_reports": sum(s.missed for s in samples),
        "writes_per_s": round(total / elapsed, 1), "duration_s": round(elapsed, 1),
        "write_p50_ms": pct(writes + first, 50), "write_p90_ms": pct(writes + first, 90),
        "write_p99_ms": pct(writes + first, 99),
        "write_max_ms": round(max(writes + first), 2) if total else None,
        "heartbeat_p99_ms": pct(writes, 99), "first_report_p99_ms": pct(first, 99),
        "lag_p99_ms": pct(lag, 99), "scheduled_to_written_p99_ms": pct(due, 99),
        "min_reports_per_edge": min(e.reports for e in edges),
        **(seen[0].report(connect_s) if args.connect else {}),
        "config_store_cpu_s": round(sum(cpu), 1),
        "config_store_cpu_s_per_replica": [round(c, 1) for c in cpu],
        "config_store_cpu_ms_per_write": round(sum(cpu) * 1000 / total, 2) if total else None,
        **({"postgres_cpu_s": round(db_cpu, 1), "postgres_cpu_ms_per_write":
            round(db_cpu * 1000 / total, 2) if total else None} if db_cpu is not None else {}),
        "fleet_client_cpu_s": round(client_cpu, 1),
    }


# -- comparisons -------------------------------------------------------------------------
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
    parser.add_argument("--principals", type=int, default=128,
                        help="principals the edges write as (one argon2 login each)")
    parser.add_argument("--workers", type=int, default=32)
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
    add_database_arg(parser)
    args = parser.parse_args()
    if min(args.edges, args.principals, args.workers, args.replicas) < 1 \
            or args.interval <= 0 or args.sample_every <= 0:
        parser.error("--edges, --principals, --workers and --replicas must be ≥ 1, "
                     "--interval and --sample-every > 0")
    if args.replicas > 1 and args.database == "sqlite":
        parser.error("--replicas > 1 needs PostgreSQL: --database postgres or a URL")
    args.parser = parser
    args.duration = args.duration or 2 * args.interval + 5
    args.principals = min(args.principals, args.edges)
    args.connections = args.connections or max(2000, -(-args.edges // args.replicas) + 1000)
    return args


def main() -> None:
    args = _args()
    exit_on_sigterm()
    enough_fds(max(args.connections, args.edges) + 2000)
    per_principal = -(-args.edges // args.principals)
    serve_args = ("--connections", str(args.connections),
                  "--notify-max-connections", str(max(256, per_principal + 1)))
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp, \
            bench_storage(args.parser, args.database) as storage:
        stores = storage.config_stores(Path(tmp), args.replicas, serve_args,
                                       {"FPLUS_HTTP_CONNECTIONS_PER_IP": "0"})
        try:
            started = time.monotonic()
            with ConfigStoreClient(stores[0].url, "admin", ADMIN_PASSWORD) as admin:
                clusters, creds = _setup(admin, args.edges, args.principals, args.workers, 8)
            setup_s = time.monotonic() - started
            fleet = _run_fleet(stores, storage, clusters, creds, args)
            naive = _naive(stores[0], clusters, creds, args.samples) if args.samples else {}
        finally:
            for store in stores:
                store.stop()
        floor = _floor(storage, args.samples)
    print(json.dumps({
        **storage.describe(), "replicas": args.replicas,
        "connections_per_replica": args.connections,
        "edges": args.edges, "interval_s": args.interval, "principals": args.principals,
        "workers": args.workers, **fleet,
        **naive,
        "floor_write_p50_ms": pct(floor, 50), "floor_write_p99_ms": pct(floor, 99),
        "setup_s": round(setup_s, 1), "cpus": os.cpu_count(),
        "target": TARGET,
    }))


if __name__ == "__main__":
    main()
