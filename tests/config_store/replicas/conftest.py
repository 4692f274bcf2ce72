"""Fixtures of the multi-replica tests: two replicas on a fresh database for the package."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.postgres import ExternalPostgres, PostgresServer

from .pair import Replicas


@pytest.fixture(scope="package")
def pair(postgres: PostgresServer | ExternalPostgres,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    """Two replicas (``pair.a``, ``pair.b``) on one fresh database, shared by the package's
    tests (each makes its own objects; a test that stops a replica starts it again)."""
    replicas = Replicas.start(tmp_path_factory.mktemp("replicas"), postgres.create_database())
    yield replicas
    replicas.stop()
