"""Edges that stay connected, as Edge Sync does, run in processes of their own
(``bench._edge_sim``), and what the Config Stores hold meanwhile.

Each edge holds a notify/v2 WebSocket with Edge Sync's subscriptions and writes its
heartbeat (see ``bench._edge_sim``). Tens of thousands of them need more file descriptors
than one process may open (``RLIMIT_NOFILE``'s hard limit, 20,000 on the development
machine) and more connections than one source address has ephemeral ports per server port
(``ip_local_port_range``, about 28,000), so they are spread over several processes, each
with its own loopback source address (127.0.0.2, 127.0.0.3, …), and over the replicas,
each on its own port.

What the servers hold is counted here: the established TCP sockets whose local end is a
Config Store's port (``/proc/net/tcp``) and the file descriptors open in its processes.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
_ESTABLISHED = "01"
EDGES_PER_PROCESS = 12_500
"""At most this many edges per simulating process (one process is one core at most)."""


@dataclass(frozen=True)
class FdLimit:
    """The open-file limit this process (and every process it starts) runs with."""

    soft: int
    hard: int
    needed: int
    hard_raised: bool
    """The hard limit was raised here (root with CAP_SYS_RESOURCE)."""

    def report(self) -> dict[str, Any]:
        return {"nofile_soft": self.soft, "nofile_hard": self.hard,
                "nofile_needed": self.needed, "nofile_hard_raised": self.hard_raised}


def raise_fd_limit(needed: int) -> FdLimit:
    """Raise RLIMIT_NOFILE for this process and its children: the hard limit to ``needed``
    when it is lower and that is permitted (root with CAP_SYS_RESOURCE, up to
    ``fs.nr_open``), then the soft limit to the hard one. Returns what it got."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    raised = False
    if hard != resource.RLIM_INFINITY and hard < needed:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (needed, needed))
            soft, hard, raised = needed, needed, True
        except (ValueError, OSError):
            pass  # not permitted: the soft limit goes up to the hard one below
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    return FdLimit(soft, hard, needed, raised)


def edge_processes(edges: int, limit: int, concurrency: int) -> int:
    """How many simulating processes ``edges`` need: each holds one socket per edge (its
    WebSocket) and up to ``concurrency`` writes' sockets, within ``limit`` descriptors."""
    per = min(EDGES_PER_PROCESS, limit - concurrency - 1000)
    if per < 1:
        raise SystemExit(f"the open-file limit {limit} is too low for the fleet")
    return -(-edges // per)


class EdgeProcess:
    """One ``bench._edge_sim`` process, driven one JSON line at a time."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench._edge_sim"], cwd=ROOT, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, start_new_session=True,
            env=dict(os.environ, PYTHONPATH=str(ROOT)))
        self._send(spec)

    def _send(self, obj: dict[str, Any]) -> None:
        stdin: IO[str] | None = self.proc.stdin
        assert stdin is not None
        stdin.write(json.dumps(obj) + "\n")
        stdin.flush()

    def receive(self) -> dict[str, Any]:
        """The process's next line (SystemExit if it ended first)."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"an edge process exited ({self.proc.wait()}); see its stderr")
        return json.loads(line)

    def go(self, clock: dict[str, float | None]) -> None:
        self._send(clock)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def established(ports: list[int]) -> list[int]:
    """Established TCP connections whose local end is 127.0.0.1:``port``, per port."""
    locals_ = {f"0100007F:{port:04X}": k for k, port in enumerate(ports)}
    counts = [0] * len(ports)
    with open("/proc/net/tcp") as table:
        next(table)
        for line in table:
            cols = line.split(None, 4)
            k = locals_.get(cols[1])
            if k is not None and cols[3] == _ESTABLISHED:
                counts[k] += 1
    return counts


def open_fds(pgid: int) -> int:
    """File descriptors open in the processes of a process group."""
    total = 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if int((proc / "stat").read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                total += len(os.listdir(proc / "fd"))
        except (OSError, IndexError, ValueError):
            continue
    return total


def server_census(servers: Callable[[], list[tuple[int, int | None]]], stop: threading.Event,
                  every: float) -> dict[str, list[int]]:
    """The most established sockets and open descriptors each replica held (``servers()``:
    its ``(port, process group)`` now), sampled every ``every`` s until ``stop``."""
    now = servers()
    sockets, fds = [0] * len(now), [0] * len(now)
    while not stop.wait(every):
        now = servers()
        for r, count in enumerate(established([port for port, _ in now])):
            sockets[r] = max(sockets[r], count)
        for r, (_, pgid) in enumerate(now):
            if pgid is not None:
                fds[r] = max(fds[r], open_fds(pgid))
    return {"server_sockets_per_replica": sockets, "server_fds_per_replica": fds}
