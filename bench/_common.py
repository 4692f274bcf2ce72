"""Small helpers shared by the benchmarks: percentiles, checked responses, CPU accounting,
the storage floor."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import statistics
import uuid
from pathlib import Path

import json_merge_patch
import requests

from harness.stack import Stack


def exit_on_sigterm() -> None:
    """SIGTERM (or SIGINT, ignored in a background job) ends the benchmark through its
    ``finally`` blocks, so the services it started are stopped, not left running."""
    def leave(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, leave)
    signal.signal(signal.SIGINT, leave)


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


def _proc_stats() -> list[tuple[int, list[str]]]:
    """``(pid, fields after the command name)`` of every process: state, ppid, pgrp, ..."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            found.append((int(stat.parent.name), stat.read_text().rsplit(")", 1)[1].split()))
        except (OSError, IndexError):
            continue
    return found


def _ticks(fields: list[str]) -> int:
    return sum(int(f) for f in fields[11:15])  # utime stime cutime cstime


def cpu_seconds(pgid: int) -> float:
    """User + system CPU (own and reaped children's) of every process in a process group."""
    total = sum(_ticks(fields) for _, fields in _proc_stats() if int(fields[2]) == pgid)
    return total / os.sysconf("SC_CLK_TCK")


def rss_mib(pgid: int) -> float:
    """Resident memory (MiB) of every process in a process group."""
    pages = 0
    for pid, fields in _proc_stats():
        if int(fields[2]) == pgid:
            try:
                pages += int(Path(f"/proc/{pid}/statm").read_text().split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return pages * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` (with its reaped children's) and of its live children:
    a PostgreSQL server, whose backends each lead a process group of their own."""
    total = sum(_ticks(fields) for p, fields in _proc_stats()
                if p == pid or int(fields[1]) == pid)
    return total / os.sysconf("SC_CLK_TCK")


def stack_cpu(stack: Stack) -> dict[str, float]:
    """CPU seconds used so far by each service of ``stack``."""
    return {name: cpu_seconds(service.proc.pid) if service.proc else 0.0
            for name, service in (("config_store", stack.store), ("git_server", stack.git),
                                  ("cluster_manager", stack.manager))}


def cpu_ms_per_op(before: dict[str, float], after: dict[str, float],
                  ops: int) -> dict[str, float | None]:
    """CPU milliseconds each process spent per operation between two :func:`stack_cpu`
    readings: the yardstick that stays steady when wall-clock figures drift."""
    return {name: round((after[name] - before[name]) * 1000 / ops, 2) if ops else None
            for name in after}


class StorageFloor:
    """The floor under a Config Store write: the cost of its storage without HTTP.

    One merge-patch (RFC 7386) of one entry per transaction, in raw SQLite with the Config
    Store's settings (WAL, ``synchronous=NORMAL``, ``BEGIN IMMEDIATE``) and its ``config``
    table: read the entry, merge, store it as canonical JSON with a new etag (unchanged
    entries are not rewritten). Not measured: HTTP, authentication, ACL checks, the
    in-memory object graph, JSON schema validation, notify events.
    """

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA busy_timeout=30000")
        self.conn.executescript(
            "CREATE TABLE IF NOT EXISTS config (app TEXT NOT NULL, object TEXT NOT NULL,"
            " json TEXT NOT NULL, etag TEXT NOT NULL, PRIMARY KEY (app, object));"
            "CREATE INDEX IF NOT EXISTS config_by_object ON config (object);")

    def patch(self, app: str, obj: str, doc: dict) -> None:
        """Merge ``doc`` into the entry of ``obj`` for ``app`` (created from ``{}``)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            row = self.conn.execute("SELECT json FROM config WHERE app = ? AND object = ?",
                                    (app, obj)).fetchone()
            merged = json_merge_patch.merge(json.loads(row[0]) if row else {}, doc)
            text = json.dumps(merged, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            if row is None or row[0] != text:
                self.conn.execute(
                    "INSERT INTO config (app, object, json, etag) VALUES (?, ?, ?, ?) ON CONFLICT"
                    " (app, object) DO UPDATE SET json = excluded.json, etag = excluded.etag",
                    (app, obj, text, str(uuid.uuid4())))
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()
