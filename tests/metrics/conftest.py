"""Fixtures for the ``/metrics`` tests: a Config Store and a Git server of this package's own
(so every count they show comes from these tests), and a reader of the text format."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from harness.servers import (
    ADMIN_PASSWORD,
    Api,
    ConfigStoreProcess,
    ServiceProcess,
    git_server_process,
)

ADMIN = ("admin", ADMIN_PASSWORD)
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(scope="package")
def metrics_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConfigStoreProcess]:
    """A Config Store for the metrics tests only."""
    server = ConfigStoreProcess(tmp_path_factory.mktemp("metrics-cs") / "data").start()
    yield server
    server.stop()


@pytest.fixture(scope="package")
def metrics_git(metrics_store: ConfigStoreProcess,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """A Git server on :func:`metrics_store`."""
    proc = git_server_process(tmp_path_factory.mktemp("metrics-git") / "data",
                              metrics_store.url).start()
    yield proc
    proc.stop()


@pytest.fixture
def store_admin(metrics_store: ConfigStoreProcess) -> Api:
    return Api(metrics_store.url, ADMIN)


def scrape(base_url: str) -> Samples:
    """``GET /metrics`` with no credentials: every sample by name and labels."""
    r = requests.get(base_url + "/metrics", timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("text/plain; version="), r.headers
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(r.text) for sample in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample ``name{labels}``, 0 when absent (a counter not yet incremented)."""
    return samples.get((name, frozenset(labels.items())), 0.0)
