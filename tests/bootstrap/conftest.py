"""Fixtures: a fresh recording-kubectl edge per test, and the CRD validators of tests/manifests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bootstrap.edge import FakeEdge
from tests.manifests.conftest import crds  # noqa: F401  (the session fixture, reused)


@pytest.fixture(scope="session")
def manifest_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the recording kubectl keeps the manifests it parsed (by content)."""
    return tmp_path_factory.mktemp("kubectl-cache")


@pytest.fixture
def edge(tmp_path: Path, manifest_cache: Path) -> FakeEdge:
    """An edge cluster that kubectl reaches: namespaces default and kube-system, no Flux."""
    return FakeEdge(tmp_path, manifest_cache)
