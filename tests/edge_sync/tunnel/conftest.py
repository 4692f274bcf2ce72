"""Fixtures for the edge tunnel: a throwaway CA, a fake kube-apiserver on loopback, Edge Sync's
in-cluster Kubernetes configuration naming it, and an environment without proxies."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.config.incluster_config import InClusterConfigLoader

from fplus.serving.http.local_ca import StackCertificates, ensure_certificates
from tests.edge_sync.tunnel.fake_apiserver import FakeApiServer

SA_TOKEN = "edge-sync-service-account-token"
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY",
                   "no_proxy", "ALL_PROXY", "all_proxy", "FPLUS_CA_FILE",
                   "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE")


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy or CA from the machine's environment: each test sets what it means."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def certs(tmp_path: Path) -> StackCertificates:
    """A throwaway CA and a server certificate for 127.0.0.1 and localhost."""
    return ensure_certificates(tmp_path / "tls", ["127.0.0.1", "localhost"])


@pytest.fixture
def apiserver(certs: StackCertificates) -> Iterator[FakeApiServer]:
    server = FakeApiServer(certs).start()
    yield server
    server.release.set()
    server.stop()


def in_cluster_configuration(tmp_path: Path, port: int, ca: Path) -> client.Configuration:
    """What Edge Sync's Kubernetes client is in a Pod: KUBERNETES_SERVICE_HOST/PORT, the
    service account's token file and CA (here in ``tmp_path``)."""
    token = tmp_path / "serviceaccount" / "token"
    token.parent.mkdir(parents=True, exist_ok=True)
    token.write_text(SA_TOKEN + "\n")
    cfg = client.Configuration()
    InClusterConfigLoader(  # type: ignore[no-untyped-call]
        token_filename=str(token), cert_filename=str(ca),
        environ={"KUBERNETES_SERVICE_HOST": "127.0.0.1",
                 "KUBERNETES_SERVICE_PORT": str(port)}).load_and_set(cfg)
    return cfg


@pytest.fixture
def kube_config(tmp_path: Path, apiserver: FakeApiServer) -> client.Configuration:
    return in_cluster_configuration(tmp_path, apiserver.port, apiserver.ca)
