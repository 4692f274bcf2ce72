"""A real Gitea (the pinned release, from ``make edge-tools``) for these tests, marked ``edge``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gitea import Gitea, start_gitea
from tests.toolchain import tool


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.edge)


@pytest.fixture(scope="module")
def gitea(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gitea]:
    """One Gitea a module, with its admin and token (skips, naming the build, if not built)."""
    tool("gitea")
    running = start_gitea(tmp_path_factory.mktemp("gitea"))
    try:
        yield running
    finally:
        running.stop()
