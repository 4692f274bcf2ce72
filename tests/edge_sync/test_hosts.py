"""Nodes → host entries (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from fplus.edge_sync.hosts import host, hosts
from harness.kube import node


def test_a_k3s_node() -> None:
    assert host(node("edge-1", control_plane=True, specialised="rpi", arch="arm64")) == {
        "hostname": "edge-1", "arch": "arm64", "k8s_version": "v1.30.4+k3s1",
        "control_plane": True, "os_version": "Ubuntu 24.04 LTS", "ready": True,
        "specialised": "rpi"}


@pytest.mark.parametrize(("change", "field", "value"), [
    ({"metadata": {"name": "by-name", "labels": {}}}, "hostname", "by-name"),
    ({"metadata": {"name": "n", "labels": {"node-role.kubernetes.io/control-plane": ""}}},
     "control_plane", True),  # kubeadm's empty value
    ({"metadata": {"name": "n", "labels": {"node-role.kubernetes.io/control-plane": "false"}}},
     "control_plane", False),
    ({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}, "ready", False),
    ({"status": {"conditions": [{"type": "MemoryPressure", "status": "True"}]}},
     "ready", False),
    ({"status": {}}, "arch", ""),
])
def test_fields(change: dict[str, Any], field: str, value: Any) -> None:
    assert host(node("n") | change)[field] == value


def test_only_the_specialised_taint_counts() -> None:
    plain = node("n") | {"spec": {"taints": [{"key": "other", "value": "x"}]}}
    assert "specialised" not in host(plain)
    both = node("n") | {"spec": {"taints": [
        {"key": "other", "value": "x"},
        {"key": "factoryplus.app.amrc.co.uk/specialised", "value": "gpu"}]}}
    assert host(both)["specialised"] == "gpu"


def test_hosts_are_sorted_and_nameless_nodes_dropped() -> None:
    nameless = {"metadata": {}, "status": {}}
    assert [h["hostname"] for h in hosts([node("b"), nameless, node("a")])] == ["a", "b"]
