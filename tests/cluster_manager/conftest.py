"""Fixtures for Cluster Manager tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.stack import Stack, start_stack


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Config Store, Git server and Cluster Manager shared by one test module."""
    running = start_stack(tmp_path_factory.mktemp("stack"))
    yield running
    running.stop()
