"""Fixtures of the Config Store suite: every test runs on both storage backends (SQLite and
a real PostgreSQL), and the ACL and principal tests get one user per module, reset per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.servers import ConfigStoreProcess
from tests.config_store.actors import Actor, new_actor


def _database_args(backend: str, request: pytest.FixtureRequest) -> tuple[str, ...]:
    """``--database`` for a fresh database of ``backend`` (none: the SQLite default)."""
    if backend == "sqlite":
        return ()
    return ("--database", request.getfixturevalue("postgres").create_database())


@pytest.fixture(scope="session", params=[
    "sqlite", pytest.param("postgresql", marks=pytest.mark.replicas)])
def backend(request: pytest.FixtureRequest) -> str:
    """The storage backend the Config Store under test runs on."""
    return request.param


@pytest.fixture(scope="session")
def config_store(backend: str, request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConfigStoreProcess]:
    """One Config Store per backend for the whole session (tests create their own objects)."""
    server = ConfigStoreProcess(tmp_path_factory.mktemp(f"cs-{backend}") / "data",
                                extra_args=_database_args(backend, request)).start()
    yield server
    server.stop()


@pytest.fixture
def fresh_store(backend: str, request: pytest.FixtureRequest,
                tmp_path) -> Iterator[ConfigStoreProcess]:
    """A Config Store of this test's own (for restarts and kills), on a fresh database."""
    server = ConfigStoreProcess(tmp_path / "data",
                                extra_args=_database_args(backend, request)).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shared_actor(config_store: ConfigStoreProcess) -> Actor:
    return new_actor(config_store)


@pytest.fixture
def actor(shared_actor: Actor) -> Iterator[Actor]:
    """The module's user, holding no grants at the start of the test."""
    shared_actor.cleanup()
    yield shared_actor
    shared_actor.cleanup()
