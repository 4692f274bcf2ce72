"""Fixtures shared by the ACL and principal tests: one user per module, reset per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.servers import ConfigStoreProcess
from tests.config_store.actors import Actor, new_actor


@pytest.fixture(scope="module")
def shared_actor(config_store: ConfigStoreProcess) -> Actor:
    return new_actor(config_store)


@pytest.fixture
def actor(shared_actor: Actor) -> Iterator[Actor]:
    """The module's user, holding no grants at the start of the test."""
    shared_actor.cleanup()
    yield shared_actor
    shared_actor.cleanup()
