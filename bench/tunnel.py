"""Edge tunnel benchmark: N idle edge tunnels on one Cluster Manager, and what a tunnel adds
to a Kubernetes GET; prints one JSON object.

Against the whole stack on free ports (``harness.stack.start_stack``): N clusters are
commissioned by the Cluster Manager (their entries loaded in bulk, as ``bench/preview.py``
does, all Ready first). Each cluster's own Edge Sync principal (recorded in its setup status)
gets a server-generated password (``POST /v2/principal/:p/password``, as bootstrapping gives
it one) and a Bearer token (``POST /token``). Then:

- memory: one tunnel is opened, used and closed (the code paths warmed), the Cluster
  Manager's worker process is read (``/proc/<pid>/smaps_rollup``: RSS, PSS and USS, and its
  open descriptors), N tunnels are opened, one per cluster, each a WebSocket to
  ``/v1/cluster/<c>/tunnel`` with that cluster's token, from a loopback address of its own
  (127.1.x.y: edges are distinct clients, and the server caps connections per address),
  carrying an HTTP/2 server-side :class:`fplus.tunnel.mux.Mux` (the edge's role), in this
  process on gevent; idle ``--idle`` s (``idle_cpu_percent``: the Cluster Manager's CPU
  meanwhile: its own pings every 15 s and its answers to the edges' pings, which an edge
  sends as Edge Sync does once it heard nothing for ``--edge-ping`` s (none while the
  Cluster Manager's pings come); the default 30 s holds two rounds of the Cluster
  Manager's),
  read again (median of 3 readings 1 s apart).
  ``rss_per_tunnel_kib`` is the worker's RSS growth over N: the memory the tunnels made
  resident. Its PSS and USS grow more, by pages it shares with the gunicorn master it was
  forked from and unshares as it writes to them (a garbage collection touching every old
  object does): ``memory`` gives them, and ``cm_pss``, the PSS of master and worker
  together, which counts each such copy once.
- latency, with every tunnel still up: ``--rounds`` rounds (median) of ``--requests``
  sequential ``GET <CM>/v1/cluster/<c>/kube/api/v1/namespaces`` on one keep-alive session as
  a user granted Edge.Perm.KubeView on the cluster (its Bearer token), and the same number
  of ``GET /api/v1/namespaces`` straight to the stand-in for the kube-apiserver the edge
  forwards to (a keep-alive gevent WSGI server in this process answering a fixed
  NamespaceList; ``--apiserver https``: over TLS with a throwaway CA, as a real edge's is,
  the direct GETs too): ``added_p50_ms`` is proxy p50 minus direct p50, what the tunnel
  adds to a kubectl that could reach the apiserver itself. The edge forwards with Edge
  Sync's own :class:`fplus.edge_sync.tunnel.Forwarder` (its service-account token, the
  impersonation, kept connections; the stand-in counts what came so, and the run fails if
  the proxied GETs did not). ``--edge fixed`` has the edge answer the NamespaceList itself
  instead (no forward: then ``added_p50_ms`` leaves the edge's forward out). For scale,
  ``cm_route`` times ``GET /v1/cluster/<c>`` (the Cluster Manager's own cheap authenticated
  route) on the same session. ``cpu_ms_per_request``: the Cluster Manager's CPU (its process
  group, from /proc) per proxied request, the median of the rounds'; ``latency`` gives it
  for each kind of GET, also less the idle tunnels' share (``cm_cpu_ms_less_idle``), and
  this process's (``bench_cpu_ms``: client, edge and stand-in), and each round's
  (``by_round``: a round another process slowed stands out).

Targets (issue 51): 1,000 idle tunnels at ≤ 64 KiB each; a tunnel adds ≤ 2 ms at p50 on
loopback. The Cluster Manager serves at most 2,000 connections (gunicorn's
``worker_connections``) and, by default, half of them from one address
(``FPLUS_HTTP_CONNECTIONS_PER_IP``): ``limits`` in the output says so.

Usage: ``python bench/tunnel.py [--tunnels 1000] [--requests 2000] [--rounds 3]
[--idle 30] [--edge-ping 20] [--edge forward|fixed] [--apiserver http|https]``; quick run:
``--tunnels 50 --requests 200``.
"""

from gevent import monkey

monkey.patch_all()

# ruff: noqa: E402  (gevent patches the standard library before anything imports it)
import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gevent
import requests
from gevent.pool import Pool

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import exit_on_sigterm, ok, pct, stack_cpu
from bench._tunnel_edge import (
    NAMESPACE_LIST,
    Edge,
    StandIn,
    answer_fixed,
    answer_forward,
    ping_as_edge_sync,
    source,
    stand_in,
)
from bench.preview import load_clusters
from fplus.cluster_manager.model.apps_and_roles import SYNC
from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.edge_sync.tunnel import Workers
from fplus.edge_sync.tunnel.session import PING_INTERVAL
from fplus.tunnel.mux import Stream
from harness.servers import ADMIN_PASSWORD
from harness.stack import STATUS, Stack, start_stack

TARGETS = {"tunnels": 1000, "rss_per_tunnel_kib": 64.0, "added_p50_ms": 2.0}
WORKER_CONNECTIONS = 2000
"""``fplus.serving.http.gunicorn.serve``'s default, which ``cluster-manager serve`` keeps."""
CONCURRENCY = 16
"""Logins and tunnel handshakes at once."""
VIEWER = "tunnel-bench-viewer"


# -- the Cluster Manager's process -------------------------------------------------------------
def _worker(master: int) -> int:
    """The gunicorn worker serving the Cluster Manager (the master's largest child)."""
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == master:
            kids.append((int(fields[21]), int(stat.parent.name)))  # rss pages, pid
    if not kids:
        raise RuntimeError(f"the Cluster Manager ({master}) has no worker process")
    return max(kids)[1]


def _memory(pid: int) -> dict[str, int]:
    """RSS, PSS and USS (KiB) and open descriptors of ``pid``."""
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, rest = line.partition(":")
        found[name] = int(rest.split()[0])
    return {"rss_kib": found["Rss"], "pss_kib": found["Pss"],
            "uss_kib": found["Private_Clean"] + found["Private_Dirty"],
            "fds": len(list(Path(f"/proc/{pid}/fd").iterdir()))}


def _sampled(worker: int, master: int, samples: int = 3) -> dict[str, int]:
    """The median of ``samples`` readings of the worker (:func:`_memory`), 1 s apart, and
    ``cm_pss_kib``: the PSS of worker and master together (what the Cluster Manager costs
    the machine, pages the worker has unshared from the master included)."""
    readings = []
    for i in range(samples):
        if i:
            gevent.sleep(1)
        readings.append(_memory(worker) | {
            "cm_pss_kib": _memory(worker)["pss_kib"] + _memory(master)["pss_kib"]})
    return {k: int(statistics.median(r[k] for r in readings)) for k in readings[0]}


def _load() -> list[float]:
    """The machine's load averages (1, 5, 15 min): latency on a busy machine is not ours."""
    return [float(v) for v in Path("/proc/loadavg").read_text().split()[:3]]


# -- set-up ----------------------------------------------------------------------------------
def edges(stack: Stack, n: int) -> list[Edge]:
    """N commissioned clusters, each with its Edge Sync principal's token."""
    admin = ConfigStoreClient(stack.store.url, "admin", ADMIN_PASSWORD, timeout=120)
    clusters = load_clusters(stack.store.url, n)
    names = {c: f"line-{i:05d}" for i, c in enumerate(clusters)}
    deadline = time.monotonic() + max(120.0, n * 0.3)
    while True:
        found = admin.search(STATUS, {"ready": True}, select={"sync": "sync.uuid"})
        if len(found.keys() & names.keys()) >= n:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(found)} of {n} clusters became Ready")
        gevent.sleep(0.5)

    def login(i: int) -> Edge:
        cluster = clusters[i]
        password = admin.generate_password(found[cluster]["sync"])
        with ConfigStoreClient(stack.store.url, SYNC.principal_name(names[cluster]),
                               password) as client:
            return Edge(cluster, client.token(), source(i))

    return list(Pool(CONCURRENCY).imap(login, range(n)))


def viewer(stack: Stack, cluster: str) -> str:
    """A Bearer token of a user granted Edge.Perm.KubeView on ``cluster`` only (and the
    setup status app's ReadApp: ``GET /v1/cluster/<c>``, the baseline, shows it)."""
    password = "tunnel-bench-viewer-password"  # a throwaway principal
    with ConfigStoreClient(stack.store.url, "admin", ADMIN_PASSWORD) as admin:
        admin.create_principal(VIEWER, password, grants=[
            {"permission": uuids.EdgePerm.KubeView, "target": cluster},
            {"permission": uuids.ConfigDBPerm.ReadApp, "target": STATUS}])
    with ConfigStoreClient(stack.store.url, VIEWER, password) as client:
        return client.token()


def connect_all(port: int, found: list[Edge], on_stream: Callable[[Stream], None],
                workers: Workers) -> float:
    """Open every edge's tunnel, :data:`CONCURRENCY` at a time; the seconds it took."""
    start = time.perf_counter()
    list(Pool(CONCURRENCY).imap_unordered(lambda e: e.connect(port, on_stream, workers),
                                          found))
    return time.perf_counter() - start


def tunnel_state(session: requests.Session, url: str, cluster: str) -> str:
    return str(ok(session.get(f"{url}/v1/cluster/{cluster}"), 200).json()["tunnel"]["state"])


# -- latency ---------------------------------------------------------------------------------
def timed(session: requests.Session, url: str, n: int) -> list[float]:
    """Milliseconds of ``n`` sequential GETs of ``url`` (each answer checked)."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        resp = session.get(url)
        times.append((time.perf_counter() - start) * 1000)
        if resp.status_code != 200 or not resp.content:
            ok(resp, 200)
            raise RuntimeError(f"GET {url}: an empty answer")
    return times


def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Phase:
    """One kind of GET over the rounds: each round's percentiles, and the requests, CPU
    and wall seconds each round took."""

    stats: list[dict[str, float | None]] = field(default_factory=list)
    rounds: list[tuple[int, float, float, float]] = field(default_factory=list)
    """Each round's requests, Cluster Manager CPU-s, this process's CPU-s and wall s."""

    def run(self, stack: Stack, session: requests.Session, url: str, n: int) -> None:
        before, mine, start = stack_cpu(stack)["cluster_manager"], _cpu_self(), time.monotonic()
        times = timed(session, url, n)
        wall = time.monotonic() - start
        self.rounds.append((n, stack_cpu(stack)["cluster_manager"] - before,
                            _cpu_self() - mine, wall))
        self.stats.append(_stats(times))

    def summary(self, idle_cpu: float) -> dict[str, Any]:
        """Median over the rounds of the percentiles and of the CPU ms per request of the
        Cluster Manager (also less what it spends meanwhile on its idle tunnels,
        ``idle_cpu`` CPU-s a second) and of this process; ``by_round``: each round's."""
        cpu = [{"cm_cpu_ms": cm * 1000 / n,
                "cm_cpu_ms_less_idle": (cm - idle_cpu * wall) * 1000 / n,
                "bench_cpu_ms": mine * 1000 / n} for n, cm, mine, wall in self.rounds]
        found: dict[str, Any] = {k: _median([r[k] for r in self.stats]) for k in self.stats[0]}
        for key in cpu[0]:
            found[key] = round(statistics.median(r[key] for r in cpu), 3)
        found["by_round"] = [{"p50_ms": stat["p50_ms"]} | {k: round(v, 3) for k, v in c.items()}
                             for stat, c in zip(self.stats, cpu, strict=True)]
        return found


def latency(stack: Stack, session: requests.Session, cluster: str, apiserver: StandIn,
            requests_n: int, rounds: int, idle_cpu: float) -> dict[str, Any]:
    """Proxied, direct and Cluster Manager route GETs, round after round; medians."""
    proxied = f"{stack.manager.url}/v1/cluster/{cluster}/kube/api/v1/namespaces"
    direct = f"{apiserver.url}/api/v1/namespaces"
    route = f"{stack.manager.url}/v1/cluster/{cluster}"
    plain = requests.Session()
    if apiserver.ca is not None:
        plain.trust_env = False  # REQUESTS_CA_BUNDLE would override its own CA
        plain.verify = str(apiserver.ca)
    assert ok(session.get(proxied), 200).content == NAMESPACE_LIST
    kinds = {"proxy": (proxied, session), "direct": (direct, plain), "cm_route": (route, session)}
    for url, s in kinds.values():
        timed(s, url, 50)  # warm
    phases = {name: Phase() for name in kinds}
    for _ in range(rounds):
        for name, (url, s) in kinds.items():
            phases[name].run(stack, s, url, requests_n)
    found = {name: phase.summary(idle_cpu) for name, phase in phases.items()}
    proxy, direct_m = found["proxy"], found["direct"]
    return {"p50_ms": proxy["p50_ms"], "p99_ms": proxy["p99_ms"],
            "added_p50_ms": _diff(proxy["p50_ms"], direct_m["p50_ms"]),
            "added_p99_ms": _diff(proxy["p99_ms"], direct_m["p99_ms"]), **found}


def _stats(times: list[float]) -> dict[str, float | None]:
    return {"p50_ms": _pct(times, 50), "p99_ms": _pct(times, 99)}


def _pct(times: list[float], q: int) -> float | None:
    """The q-th percentile to 0.01 ms (``pct`` rounds to 0.1)."""
    found = pct([t * 10 for t in times], q)
    return None if found is None else round(found / 10, 2)


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 2) if known else None


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 2)


# -- the run ---------------------------------------------------------------------------------
def run(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    n = args.tunnels
    start = time.monotonic()
    found = edges(stack, n)
    setup_s = time.monotonic() - start
    apiserver = stand_in(Path(args.tmp) / "apiserver-tls" if args.apiserver == "https"
                         else None)
    forwarder = answer_forward(apiserver)
    on_stream: Callable[[Stream], None] = answer_fixed if args.edge == "fixed" else forwarder
    workers = Workers()  # the edges' stream threads (greenlets here), shared
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {viewer(stack, found[0].cluster)}"
    port, url = stack.manager.port, stack.manager.url
    assert stack.manager.proc is not None
    master = stack.manager.proc.pid
    worker = _worker(master)
    pinging: gevent.Greenlet | None = None
    try:
        # warm: one tunnel up, used, and down again
        found[0].connect(port, on_stream, workers)
        timed(session, f"{url}/v1/cluster/{found[0].cluster}/kube/api/v1/namespaces", 20)
        found[0].close()
        found[0] = Edge(found[0].cluster, found[0].token, found[0].source)
        gevent.sleep(2)
        before = _sampled(worker, master)
        connect_s = connect_all(port, found, on_stream, workers)
        if args.edge_ping > 0:
            pinging = ping_as_edge_sync(found, args.edge_ping)
        idle_from, idle_start = stack_cpu(stack)["cluster_manager"], time.monotonic()
        gevent.sleep(args.idle)
        idle_cpu = ((stack_cpu(stack)["cluster_manager"] - idle_from)
                    / (time.monotonic() - idle_start))
        after = _sampled(worker, master)
        states = {tunnel_state(session, url, e.cluster) for e in (found[0], found[-1])}
        live = sum(1 for e in found if e.mux is not None and not e.mux.closed.is_set())
        if states != {"connected"} or live != n:
            raise RuntimeError(f"{live} of {n} tunnels up; the CM says {states}")
        load = {"before_latency": _load()}
        delay = latency(stack, session, found[0].cluster, apiserver, args.requests,
                        args.rounds, idle_cpu)
        load["after_latency"] = _load()
        still = sum(1 for e in found if e.mux is not None and not e.mux.closed.is_set())
        impersonated = apiserver.impersonated
        if args.edge == "forward" and (impersonated < args.requests * args.rounds
                                       or apiserver.last_user != "fplus:view"):
            raise RuntimeError(f"the stand-in got {impersonated} requests as Edge Sync "
                               f"forwards them (last as {apiserver.last_user})")
    finally:
        if pinging is not None:
            pinging.kill()
        for edge in found:
            edge.close()
        forwarder.close()
        apiserver.stop()
    grown = {k: after[k] - before[k] for k in before}
    return {
        "tunnels": n, "still_connected_after_latency": still, "edge": args.edge,
        "edge_answers": "Edge Sync's Forwarder to a kube-apiserver stand-in over "
        f"{args.apiserver} (keep-alive; {impersonated} requests came impersonating)"
        if args.edge == "forward" else "a fixed NamespaceList itself (no forward)",
        "apiserver": args.apiserver,
        "requests": args.requests, "rounds": args.rounds,
        "rss_per_tunnel_kib": round(grown["rss_kib"] / n, 1),
        "memory": {"before": before, "after": after, "per_tunnel_kib": {
            k.removesuffix("_kib"): round(v / n, 1) for k, v in grown.items() if k != "fds"},
            "fds_per_tunnel": round(grown["fds"] / n, 2), "idle_s": args.idle},
        "edge_ping_s": args.edge_ping,
        "latency": delay,
        "cpu_ms_per_request": delay["proxy"]["cm_cpu_ms"],
        "idle_cpu_percent": round(idle_cpu * 100, 2),
        "setup_s": round(setup_s, 1), "connect_s": round(connect_s, 1),
        "loadavg": load, "cpus": os.cpu_count(),
        "limits": {"worker_connections": WORKER_CONNECTIONS,
                   "connections_per_ip": WORKER_CONNECTIONS // 2,
                   "note": "one gevent worker serves at most worker_connections (2000) "
                           "connections, tunnels included; one client address at most "
                           "FPLUS_HTTP_CONNECTIONS_PER_IP (default 1000): edges behind one "
                           "NAT or proxy need it raised (0: no cap); each edge here has its "
                           "own 127.1.x.y address"},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tunnels", type=int, default=TARGETS["tunnels"])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--idle", type=float, default=30.0,
                        help="seconds the tunnels stay idle before memory is read (30: two "
                             "rounds of the Cluster Manager's pings, every 15 s, are in it)")
    parser.add_argument("--edge-ping", type=float, default=PING_INTERVAL,
                        help="seconds of silence after which an edge pings, as Edge Sync's "
                             "(0: never)")
    parser.add_argument("--edge", choices=("forward", "fixed"), default="forward",
                        help="forward: the edge forwards to a kube-apiserver stand-in with "
                             "Edge Sync's forwarder; fixed: the edge answers the "
                             "NamespaceList itself")
    parser.add_argument("--apiserver", choices=("http", "https"), default="http",
                        help="how the stand-in (and so the direct baseline) speaks: http, "
                             "or https with a throwaway CA, as a real kube-apiserver does")
    args = parser.parse_args()
    if args.tunnels < 1 or args.requests < 1 or args.rounds < 1:
        parser.error("--tunnels, --requests and --rounds must be at least 1")
    exit_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="fplus-bench-tunnel-") as tmp:
        args.tmp = tmp
        stack = start_stack(Path(tmp))
        try:
            result = run(stack, args)
        finally:
            stack.stop()
    result["targets"] = TARGETS
    added = result["latency"]["added_p50_ms"]
    result["targets_met"] = {
        "tunnels": args.tunnels >= TARGETS["tunnels"]
        and result["still_connected_after_latency"] == args.tunnels,
        "rss_per_tunnel_kib": result["rss_per_tunnel_kib"] <= TARGETS["rss_per_tunnel_kib"],
        "added_p50_ms": added is not None and added <= TARGETS["added_p50_ms"]}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
