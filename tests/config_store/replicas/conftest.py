"""Fixtures of the multi-replica tests: two replicas on a fresh database per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.postgres import ExternalPostgres, PostgresServer

from .pair import Replicas


@pytest.fixture(scope="module")
def pair(postgres: PostgresServer | ExternalPostgres,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    """Two replicas (``pair.a``, ``pair.b``) on one fresh database, shared by a module."""
    replicas = Replicas.start(tmp_path_factory.mktemp("replicas"), postgres.create_database())
    yield replicas
    replicas.stop()
