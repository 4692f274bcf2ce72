"""Kubernetes objects as the API server returns them, for tests and benchmarks."""

from __future__ import annotations

from typing import Any


def node(name: str, *, ready: bool = True, control_plane: bool = False,
         specialised: str | None = None, arch: str = "amd64") -> dict[str, Any]:
    """A Node as the API server returns it (every nodeInfo field the client requires)."""
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/arch": arch}
    if control_plane:
        labels["node-role.kubernetes.io/control-plane"] = "true"
    spec: dict[str, Any] = {}
    if specialised is not None:
        spec["taints"] = [{"key": "factoryplus.app.amrc.co.uk/specialised",
                           "value": specialised, "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels}, "spec": spec,
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "nodeInfo": {"architecture": arch, "bootID": "b", "containerRuntimeVersion":
                         "containerd://1.7", "kernelVersion": "6.8.0", "kubeProxyVersion":
                         "v1.30.4+k3s1", "kubeletVersion": "v1.30.4+k3s1", "machineID": "m",
                         "operatingSystem": "linux", "osImage": "Ubuntu 24.04 LTS",
                         "systemUUID": "s"}},
    }
