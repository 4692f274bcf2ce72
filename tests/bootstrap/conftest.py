"""Fixtures: an emulated edge cluster per test, the pinned Flux release on loopback, and the
CRD validators of tests/manifests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bootstrap.cluster import EdgeCluster, FileServer
from tests.bootstrap.edge import FLUX_URL
from tests.manifests.conftest import crds  # noqa: F401  (the session fixture, reused)
from tests.shared_files import FLUX_INSTALL, need

RELEASE_PATH = FLUX_URL.split("github.com", 1)[1]  # the same path as the real release


@pytest.fixture(scope="session")
def flux_release() -> Iterator[FileServer]:
    """The pinned Flux install manifests, served where the scripts under test download them."""
    server = FileServer({RELEASE_PATH: need(FLUX_INSTALL)})
    yield server
    server.close()


@pytest.fixture(scope="session")
def flux_url(flux_release: FileServer) -> str:
    return flux_release.url + RELEASE_PATH


@pytest.fixture
def edge(tmp_path: Path) -> Iterator[EdgeCluster]:
    """An edge cluster kubectl reaches: one node, namespaces default and kube-system, no Flux."""
    cluster = EdgeCluster(tmp_path)
    yield cluster
    cluster.close()


def pytest_configure(config: pytest.Config) -> None:
    # kmock 0.8 loads its bundled discovery with a deprecated importlib call
    config.addinivalue_line(
        "filterwarnings", "ignore:read_binary is deprecated:DeprecationWarning")
