"""Fleet benchmark: N simulated Edge Sync agents stay connected to and report to the Config
Store (one, or ``--replicas`` on one PostgreSQL database); prints one JSON object.

Each simulated edge is the real status path of Edge Sync: an ``fplus.edge_sync.status``
``StatusReporter`` (merge-PATCH of the Edge cluster status entry over HTTP, through the
Config Store client with its Bearer tokens and keep-alive pool). Its first report carries
``hosts`` (fake Node objects mapped by ``fplus.edge_sync.hosts``), ``kubeseal_cert``, ``lastSeen``
and ``version``; later ones the heartbeat (``lastSeen``). Every edge reports every
``--interval`` seconds on its own phase, so the aggregate rate is N / interval writes per
second, spread evenly. ``--workers`` threads fire the reports (each owns a slice of the
edges and its own schedule); ``lag`` is how late a report started against its schedule
(the workers bound the requests in flight, so a slow server shows as lag as well as write
time; ``scheduled_to_written`` adds both: what an independent edge would wait). The load
ends on time whatever the lag: reports due by then but never started are
``missed_reports``.

Each edge writes as a principal of its own by default, as real edges do (``op1sync/<name>``,
holding ReadApp + WriteApp on the Edge cluster status restricted to its edge's object, a
server-generated password as the bootstrap script installs): the Cluster Manager's grants.
``--principals P`` shares P principals among the edges instead (the shape of earlier runs,
argon2 passwords; the ACL check then scans more grants per principal). Every principal logs
in once before the clock starts.

``--restart-at S`` (default: one interval and two seconds into the load; 0: none) restarts
the Config Store(s) mid-load, gracefully, on the same data: every edge keeps its Bearer
token (tokens persist) and reports again at its next heartbeat. ``restart_all_back_s`` is
the time from the restarted store answering to the last edge's first write after it (the
target: within 60 s), ``logins_after_restart`` how many edges had to log in again.
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
- naive: a fresh connection and HTTP Basic login per write (a simple script's agent). With
  the edges' generated passwords each login is a salted SHA-256 check; with ``--principals``
  (argon2 passwords) it costs ~100 ms of a core, which is why it is not mixed into the
  fleet's load: its server CPU per write says what a fleet of such agents would cost;
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
from bench._fleet_setup import fake_hosts, owner, setup_fleet
from bench._storage import BenchStorage, add_database_arg, bench_storage
from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.edge_sync import __version__
from fplus.edge_sync.retry import Backoff
from fplus.edge_sync.status import StatusReporter, utc_now
from harness.certs import certificate
from harness.servers import ADMIN_PASSWORD, ConfigStoreProcess, ServiceProcess

STATUS = uuids.App.EdgeClusterStatus
TARGET = {"edges": 10000, "write_p99_ms": 50, "restart_all_back_s": 60}


@dataclass
class Edge:
    """One simulated agent."""

    uuid: str
    reporter: StatusReporter
    hosts: list[dict[str, Any]]
    reports: int = 0
    back_at: float | None = None
    """When its first write after the restart began landed (monotonic)."""


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


# -- the fleet ---------------------------------------------------------------------------
@dataclass
class Restart:
    """The Config Stores' restart mid-load: when they went down and answered again."""

    down_at: float | None = None
    up_at: float | None = None
    cpu_spent: list[float] = field(default_factory=list)
    """Per store: CPU seconds of the process that was stopped, less what the process that
    replaced it spent starting (added to the new process's count, the load's CPU in all)."""

    def run(self, stores: list[ServiceProcess], at: float, stop: threading.Event) -> None:
        """At monotonic time ``at`` (unless ``stop`` comes first), restart every store."""
        if stop.wait(max(0.0, at - time.monotonic())):
            return
        self.down_at = time.monotonic()
        old = [cpu_seconds(store.proc.pid) if store.proc else 0.0 for store in stores]
        for store in stores:
            store.stop()
        for store in stores:
            store.start()
        self.up_at = time.monotonic()
        self.cpu_spent = [before - (cpu_seconds(store.proc.pid) if store.proc else 0.0)
                          for store, before in zip(stores, old, strict=True)]

    def report(self, edges: list[Edge], clients: list[ConfigStoreClient],
               tokens: list[str]) -> dict[str, Any]:
        if self.down_at is None or self.up_at is None:
            return {}
        back = [e.back_at for e in edges]
        return {"restart_down_s": round(self.up_at - self.down_at, 1),
                "restart_all_back_s": (round(max(back) - self.up_at, 1)  # type: ignore[type-var]
                                       if all(b is not None for b in back) else None),
                "restart_edges_not_back": sum(b is None for b in back),
                "logins_after_restart": sum(c.token() != t for c, t in zip(clients, tokens,
                                                                           strict=True))}


def _worker(edges: list[Edge], phases: list[float], t0: float, interval: float,
            end: float, cert: str, samples: Samples, restart: Restart) -> None:
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
        started = time.monotonic()
        result = edge.reporter.flush()
        samples.due_ms.append((time.monotonic() - due) * 1000)
        if result.ok:
            edge.reports += 1
            if edge.back_at is None and restart.down_at is not None \
                    and started > restart.down_at:
                edge.back_at = time.monotonic()
            (samples.first_ms if first else samples.write_ms).append(result.seconds * 1000)
        else:
            samples.errors += 1
        heapq.heappush(queue, (due + interval, i))


def _run_fleet(stores: list[ServiceProcess], storage: BenchStorage, clusters: list[str],
               creds: list[tuple[str, str]], args: argparse.Namespace) -> dict[str, Any]:
    replicas = len(stores)
    clients = [ConfigStoreClient(stores[p % replicas].url, name, pw, retries=0)
               for p, (name, pw) in enumerate(creds)]
    with ThreadPoolExecutor(args.workers) as pool:  # one login each, before the clock starts
        tokens = list(pool.map(lambda cs: cs.token(), clients))
    owners = [owner(i, args.workers, len(clients)) for i in range(len(clusters))]
    fleet, stop, seen, restart = Fleet(), threading.Event(), [], Restart()
    try:
        connect_s = fleet.open(clusters, [clients[o] for o in owners],
                               [o % replicas for o in owners]) if args.connect else None
        backoff = Backoff(args.interval, args.interval)
        edges = [Edge(c, StatusReporter(clients[owners[i]], c, backoff=backoff), fake_hosts(i))
                 for i, c in enumerate(clusters)]
        cert = certificate(0)
        n, w = len(edges), args.workers
        samples = [Samples() for _ in range(w)]
        t0 = time.monotonic() + 1.0
        end = t0 + args.duration
        threads = [threading.Thread(target=_worker, args=(
            edges[k::w], [(i * args.interval / n) for i in range(k, n, w)], t0, args.interval,
            end, cert, samples[k], restart), daemon=True) for k in range(w)]
        restarter = threading.Thread(target=restart.run, args=(
            stores, t0 + args.restart_at, stop), daemon=True)
        watcher = threading.Thread(target=lambda: seen.append(census(
            fleet, [(s.port, s.proc.pid) for s in stores if s.proc], stop, args.sample_every)))
        cpu_before = [cpu_seconds(s.proc.pid) for s in stores if s.proc]
        db_before, client_before = storage.server_cpu_seconds(), time.process_time()
        watcher.start()
        if args.restart_at:
            restarter.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - t0
        carried = restart.cpu_spent or [0.0] * len(cpu_before)  # across the restart
        cpu = [cpu_seconds(s.proc.pid) - b + c
               for s, b, c in zip(stores, cpu_before, carried, strict=True)
               if s.proc]
        db_after = storage.server_cpu_seconds()
        db_cpu = db_after - db_before if db_after is not None and db_before is not None else None
        client_cpu = time.process_time() - client_before
        stop.set()
        watcher.join()
        if args.restart_at:
            restarter.join()
        restarted = restart.report(edges, clients, tokens)
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
        **restarted,
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
    parser.add_argument("--principals", type=int,
                        help="principals the edges share (default: one per edge, as real "
                             "edges; fewer: argon2 passwords, one login each)")
    parser.add_argument("--restart-at", type=float,
                        help="seconds into the load to restart the Config Store(s) "
                             "(default: interval + 2; 0: no restart)")
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
    args.principals = args.principals or args.edges
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
    args.connections = args.connections or max(2000, -(-args.edges // args.replicas) + 1000)
    return args


def main() -> None:
    args = _args()
    exit_on_sigterm()
    enough_fds(max(args.connections, args.edges) + 2000)
    per_principal = -(-args.edges // args.principals)
    serve_args = ("--connections", str(args.connections),
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
        "targets_met": {
            "write_p99_ms": fleet["write_p99_ms"] is not None
            and fleet["write_p99_ms"] < TARGET["write_p99_ms"],
            "restart_all_back_s": (None if "restart_all_back_s" not in fleet else
                                   fleet["restart_all_back_s"] is not None and
                                   fleet["restart_all_back_s"] <= TARGET["restart_all_back_s"]),
        },
    }))


if __name__ == "__main__":
    main()
