"""The agent's ``kubeseal_cert``: via the service proxy, via the key Secret, rotation."""

from __future__ import annotations

from kubernetes import client

from fplus.config_store.client import ConfigStoreClient
from harness.certs import certificate
from harness.kube import node
from tests.edge_sync.conftest import StartAgent
from tests.edge_sync.emulator import KubeHarness
from tests.edge_sync.helpers import (
    CONTROLLER,
    SS_NAMESPACE,
    Edge,
    controller_service,
    key_secret,
    status,
    wait_for,
)


def _serve_cert(kube: KubeHarness, pem: str) -> None:
    def register() -> None:
        kube.emulator.proxied[(SS_NAMESPACE, CONTROLLER, "v1/cert.pem")] = pem.encode()
    kube.call(register)


def test_certificate_via_service_proxy_keeps_hosts(
        cs_admin: ConfigStoreClient, edge: Edge, kube: KubeHarness,
        start_agent: StartAgent) -> None:
    client.CoreV1Api(kube.api()).create_node(node("edge-1"))
    kube.put("v1/services", SS_NAMESPACE, CONTROLLER, controller_service())
    pem = certificate(0)
    _serve_cert(kube, pem)
    start_agent(edge)

    wait_for(lambda: status(cs_admin, edge).get("kubeseal_cert") == pem, what="the cert")
    wait_for(lambda: status(cs_admin, edge).get("hosts"), what="hosts beside the cert")
    assert kube.requests("/proxy/")[0].url.path == (f"/api/v1/namespaces/{SS_NAMESPACE}/services/"
                                   f"http:{CONTROLLER}:http/proxy/v1/cert.pem")


def test_certificate_via_newest_active_key_secret(
        cs_admin: ConfigStoreClient, edge: Edge, kube: KubeHarness,
        start_agent: StartAgent) -> None:
    """No controller Service: the newest Secret labelled active wins, others are ignored."""
    older, newer, inactive = certificate(1, days_ago=40), certificate(2, days_ago=10), \
        certificate(3)
    kube.put("v1/secrets", SS_NAMESPACE, "sealed-secrets-keyb", key_secret("b", newer))
    kube.put("v1/secrets", SS_NAMESPACE, "sealed-secrets-keya", key_secret("a", older))
    kube.put("v1/secrets", SS_NAMESPACE, "other", key_secret("other", inactive, active=False))
    start_agent(edge)

    wait_for(lambda: status(cs_admin, edge).get("kubeseal_cert") == newer,
             what="the newest active key's cert")


def test_rotation_pushes_the_new_certificate(
        cs_admin: ConfigStoreClient, edge: Edge, kube: KubeHarness,
        start_agent: StartAgent) -> None:
    kube.put("v1/services", SS_NAMESPACE, CONTROLLER, controller_service())
    first, renewed = certificate(4, days_ago=30), certificate(5)
    _serve_cert(kube, first)
    start_agent(edge)
    wait_for(lambda: status(cs_admin, edge).get("kubeseal_cert") == first, what="first cert")

    _serve_cert(kube, renewed)  # the controller renewed its key (every 30 days)
    wait_for(lambda: status(cs_admin, edge).get("kubeseal_cert") == renewed,
             what="the renewed cert")


def test_no_certificate_anywhere_is_not_reported(
        cs_admin: ConfigStoreClient, edge: Edge, kube: KubeHarness,
        start_agent: StartAgent) -> None:
    """A Service without endpoints (503) and no key Secret: nothing is written, no crash."""
    kube.put("v1/services", SS_NAMESPACE, CONTROLLER, controller_service())
    agent = start_agent(edge)
    wait_for(lambda: status(cs_admin, edge).get("lastSeen"), what="a heartbeat")
    wait_for(lambda: len(kube.requests("/proxy/")) >= 2, what="a retried fetch")
    assert "kubeseal_cert" not in status(cs_admin, edge)
    assert all(t.is_alive() for t in agent._threads)
