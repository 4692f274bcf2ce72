"""The emulator's additions to kmock behave as documented (so other tests mean something)."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.edge_sync.emulator import HELM_RELEASES, KubeHarness
from tests.edge_sync.helpers import CONTROLLER, SS_NAMESPACE, controller_service

HR = ("helm.toolkit.fluxcd.io", "v2", "ns", "helmreleases")


def _apply(custom: client.CustomObjectsApi, body: dict, manager: str | None = "m") -> None:
    custom.patch_namespaced_custom_object(*HR, body["metadata"]["name"], body,
                                          field_manager=manager, force=True,
                                          _content_type="application/apply-patch+yaml")


def test_server_side_apply_creates_then_replaces_keeping_status(kube: KubeHarness) -> None:
    custom = client.CustomObjectsApi(kube.api())
    _apply(custom, {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                    "metadata": {"name": "r"}, "spec": {"a": 1, "b": 2}})
    kube.call(lambda: kube.emulator.objects[HELM_RELEASES, "ns", "r"].patch(
        {"status": {"ready": True}}))
    _apply(custom, {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                    "metadata": {"name": "r"}, "spec": {"a": 3}})
    obj = kube.objects(HELM_RELEASES, "ns")["r"]
    assert obj["spec"] == {"a": 3} and obj["status"] == {"ready": True}
    assert obj["metadata"]["namespace"] == "ns"
    with pytest.raises(ApiException) as err:
        _apply(custom, {"metadata": {"name": "r"}}, manager=None)
    assert err.value.status == 422


def test_namespace_injection_and_label_selectors(kube: KubeHarness) -> None:
    core = client.CoreV1Api(kube.api())
    core.create_namespaced_config_map("ns", {"metadata": {"name": "a", "labels": {"x": "1"}}})
    core.create_namespaced_config_map("ns", {"metadata": {"name": "b", "labels": {"x": "2"}}})
    core.create_namespaced_config_map("ns", {"metadata": {"name": "c"}})
    assert kube.objects("v1/configmaps", "ns")["a"]["metadata"]["namespace"] == "ns"

    def names(selector: str) -> list[str]:
        found = core.list_namespaced_config_map("ns", label_selector=selector)
        return sorted(item.metadata.name for item in found.items)

    assert names("x=1") == ["a"]
    assert names("x==2") == ["b"]
    assert names("x!=1") == ["b", "c"]
    assert names("x") == ["a", "b"]
    assert names("!x") == ["c"]
    assert names("x,x!=2") == ["a"]


def test_service_proxy(kube: KubeHarness) -> None:
    core = client.CoreV1Api(kube.api())

    def fetch() -> bytes:
        # raw: the typed client cannot decode application/x-pem-file (nor can it the
        # real controller's answer), which is why Edge Sync reads it raw too
        return core.connect_get_namespaced_service_proxy_with_path(
            f"http:{CONTROLLER}:http", SS_NAMESPACE, "v1/cert.pem",
            _preload_content=False).data

    with pytest.raises(ApiException) as err:
        fetch()
    assert err.value.status == 404  # no such Service
    kube.put("v1/services", SS_NAMESPACE, CONTROLLER, controller_service())
    with pytest.raises(ApiException) as err:
        fetch()
    assert err.value.status == 503  # no endpoints
    kube.call(lambda: kube.emulator.proxied.update(
        {(SS_NAMESPACE, CONTROLLER, "v1/cert.pem"): b"PEM"}))
    assert fetch() == b"PEM"


def test_outage_refuses_connections(kube: KubeHarness) -> None:
    cfg = client.Configuration()
    cfg.host = kube.url
    cfg.retries = 0
    core = client.CoreV1Api(client.ApiClient(cfg))
    core.list_node()
    with kube.outage(), pytest.raises(Exception, match=r"[Cc]onnection"):
        core.list_node(_request_timeout=2)
    core.list_node()


def test_list_pagination(kube: KubeHarness) -> None:
    core = client.CoreV1Api(kube.api())
    for ns, name in [("b", "x"), ("a", "y"), ("a", "x")]:
        core.create_namespaced_config_map(ns, {"metadata": {"name": name}})
    first = core.list_config_map_for_all_namespaces(limit=2)
    assert [(i.metadata.namespace, i.metadata.name) for i in first.items] == [("a", "x"),
                                                                             ("a", "y")]
    assert first.metadata._continue == "2" and first.metadata.remaining_item_count == 1
    last = core.list_config_map_for_all_namespaces(limit=2, _continue=first.metadata._continue)
    assert [(i.metadata.namespace, i.metadata.name) for i in last.items] == [("b", "x")]
    assert last.metadata._continue is None
    assert len(core.list_config_map_for_all_namespaces().items) == 3  # no limit: everything
    with pytest.raises(ApiException) as err:
        core.list_config_map_for_all_namespaces(limit=2, _continue="not-ours")
    assert err.value.status == 400
