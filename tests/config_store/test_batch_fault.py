"""``POST /v2/batch`` under kill -9: a Config Store killed while a large batch is in its
transaction holds, once restarted on the same database, either every entry of the batch or
none. Killed at several points of the batch, each observed in the database itself (the
transaction open, or part of it written), never guessed from a delay. On both storage
backends."""

from __future__ import annotations

import functools
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient, batch
from harness.servers import ADMIN_PASSWORD, ConfigStoreProcess

OPERATIONS = 100
ENTRY_BYTES = 60_000
"""Each entry's size: 6 MB in all, more than SQLite's page cache, so the transaction spills
pages into the WAL before its commit."""
WRITE_LOCK = 0x66706C7573_00
"""The advisory lock every write transaction on PostgreSQL holds (its storage's own)."""

Stage = Callable[[], bool]
"""Whether the batch has reached the point where the test kills the server."""


def _server(data_dir: Path, database: tuple[str, ...]) -> ConfigStoreProcess:
    return ConfigStoreProcess(data_dir, extra_args=(*database, "--body-limit", str(16 << 20)))


def _wal_grew(data_dir: Path, by: int) -> Stage:
    """SQLite: the WAL has grown ``by`` bytes past its size now (the batch has written)."""
    wal = data_dir / "config-store.db-wal"
    start = wal.stat().st_size if wal.exists() else 0
    return lambda: wal.exists() and wal.stat().st_size >= start + max(by, 1)


def _pg_holding(url: str, written: bool) -> Stage:
    """PostgreSQL: a backend holds the write lock (and, with ``written``, has written)."""
    sql = ("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
           "WHERE l.locktype = 'advisory' AND l.granted AND l.objid = %s"
           + (" AND a.backend_xid IS NOT NULL" if written else ""))

    def reached() -> bool:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(sql, (WRITE_LOCK & 0xFFFFFFFF,)).fetchone()
        return bool(row and row[0])

    return reached


def _until(stage: Stage, done: threading.Event) -> bool:
    """Poll ``stage`` until it holds (True) or the batch has been answered (False)."""
    while not done.is_set():
        if stage():
            return True
        time.sleep(0.001)
    return False


def _kill_mid_batch(server: ConfigStoreProcess, app: str, objs: list[str],
                    stage: Callable[[], Stage]) -> tuple[bool, int | None]:
    """Send the batch from a thread and SIGKILL the server once ``stage()`` holds; whether
    the kill came before the answer, and the status of any answer."""
    ops = [batch.put_config(app, o, {"i": i, "pad": "x" * ENTRY_BYTES}).wire()
           for i, o in enumerate(objs)]
    answered: dict[str, Any] = {}
    done = threading.Event()
    reached = stage()

    def send() -> None:
        try:
            answered["status"] = requests.post(
                server.url + "/v2/batch", json={"operations": ops},
                auth=("admin", ADMIN_PASSWORD), timeout=120).status_code
        except requests.RequestException:
            answered["status"] = None
        finally:
            done.set()

    sender = threading.Thread(target=send)
    sender.start()
    in_flight = _until(reached, done)
    server.stop(signal.SIGKILL)
    sender.join()
    return in_flight, answered.get("status")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.replicas)])
def fault_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def stages(fault_backend: str, request: pytest.FixtureRequest,
           tmp_path: Path) -> Iterator[list[tuple[ConfigStoreProcess, Callable[[], Stage]]]]:
    """A fresh server per kill point, with that point's check (made just before the batch)."""
    made: list[ConfigStoreProcess] = []
    out: list[tuple[ConfigStoreProcess, Callable[[], Stage]]] = []
    if fault_backend == "sqlite":
        for i, by in enumerate((1, 1 << 20, 3 << 20)):
            data = tmp_path / f"s{i}" / "data"
            made.append(_server(data, ()))
            out.append((made[-1], functools.partial(_wal_grew, data, by)))
    else:
        postgres = request.getfixturevalue("postgres")
        for i, written in enumerate((False, True)):
            url = postgres.create_database()
            made.append(_server(tmp_path / f"p{i}" / "data", ("--database", url)))
            out.append((made[-1], functools.partial(_pg_holding, url, written)))
    yield out
    for server in made:
        server.stop()


def test_kill_9_mid_batch_leaves_all_or_nothing(
        stages: list[tuple[ConfigStoreProcess, Callable[[], Stage]]]) -> None:
    killed_in_flight = 0
    for server, stage in stages:
        server.start()
        cs = ConfigStoreClient(server.url, "admin", ADMIN_PASSWORD)
        app = str(uuid.uuid4())
        objs = [str(uuid.uuid4()) for _ in range(OPERATIONS)]
        cs.batch([batch.create_object(uuids.Class.App, app),
                  *(batch.create_object(uuids.Class.Device, o) for o in objs[:OPERATIONS - 1])])
        cs.create_object(uuids.Class.Device, objs[-1])
        in_flight, status = _kill_mid_batch(server, app, objs, stage)
        killed_in_flight += in_flight
        server.start()  # the same data directory and database
        cs = ConfigStoreClient(server.url, "admin", ADMIN_PASSWORD)
        written = sorted(cs.list_app_objects(app))
        assert written in ([], sorted(objs)), f"{len(written)} of {OPERATIONS} entries"
        if status == 200:
            assert written == sorted(objs)
        if written:
            assert [cs.get_config(app, o) for o in (objs[0], objs[-1])] == [
                {"i": 0, "pad": "x" * ENTRY_BYTES},
                {"i": OPERATIONS - 1, "pad": "x" * ENTRY_BYTES}]
        server.stop()
    assert killed_in_flight, "no kill came while a batch was in its transaction"
