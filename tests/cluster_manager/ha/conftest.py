"""Fixtures for the Cluster Manager's replica tests: its database on real SQLite and real
PostgreSQL (the session's server, see tests/conftest.py), and two replicas on a PostgreSQL of
this package's own (tests stop and start it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fplus.cluster_manager.db import Database, open_database
from fplus.cluster_manager.leader import SCHEMA as LEASE_SCHEMA
from fplus.cluster_manager.services.bootstrap.tokens import SCHEMA as TOKENS_SCHEMA
from harness.postgres import PostgresServer, find_bin_dir
from tests.cluster_manager.ha.replicas import Replicas, start_replicas


class OpenDatabase:
    """``open_db()``: a new handle on one database with the Cluster Manager's tables (made
    by the first call), as each replica has its own; ``open_db.url`` names the database."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.handles: list[Database] = []

    def __call__(self) -> Database:
        db = open_database(self.url)
        db.prepare(TOKENS_SCHEMA + LEASE_SCHEMA)
        self.handles.append(db)
        return db


@pytest.fixture(params=["sqlite", "postgresql"])
def open_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenDatabase]:
    """Handles on one fresh database: a SQLite file, or a database on the session's
    PostgreSQL."""
    handles = OpenDatabase(f"sqlite:///{tmp_path / 'cm.sqlite'}" if request.param == "sqlite"
                           else request.getfixturevalue("postgres_url"))
    yield handles
    for db in handles.handles:
        db.close()


@pytest.fixture(scope="package")
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL of this package's own, to stop and start again."""
    if find_bin_dir() is None:
        pytest.skip("needs the PostgreSQL binaries (initdb, postgres) to stop and restart one")
    server = PostgresServer(fsync=False).start()
    yield server
    server.stop()


@pytest.fixture(scope="package")
def replicas(tmp_path_factory: pytest.TempPathFactory,
             own_postgres: PostgresServer) -> Iterator[Replicas]:
    """Config Store, Git server and two Cluster Manager replicas on ``own_postgres``. A test
    that kills a replica puts a new one in its place (:meth:`Replicas.replace`)."""
    running = start_replicas(tmp_path_factory.mktemp("replicas"),
                             own_postgres.create_database())
    yield running
    running.stop()
