"""A real edge cluster on loopback: the pinned Kubernetes control plane, kwok's nodes and a
host-process kubelet for Flux, Sealed Secrets and Edge Sync (see ``kubelet``).

Simulated: kubelets, the container runtime and Pod networking. kwok marks Pods scheduled,
Running and Ready (so Deployments become Available, as the bootstrap script waits for);
the images whose behaviour matters run as host processes authenticated as their
ServiceAccounts. None of this changes what the tests prove about what we hand an edge:
the API server, admission, RBAC, the Flux and Sealed Secrets controllers and kubectl are
the real ones, and they read exactly the manifests, credentials and script we produce.
What is not exercised: image pulls, Pod-to-Pod traffic and the API server's service
proxy to a Pod (Pods have no network; Edge Sync falls back to the controller's key Secret).
A Pod's logs, exec and port-forward go through the API server to kwok's kubelet API, which
serves them from a log file, a host command and a loopback port (see ``streams``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.realedge.controlplane import ControlPlane, NodeSpec, start_control_plane
from harness.realedge.kubelet import HostKubelet

__all__ = ["Edge", "NodeSpec", "start_edge", "started_edges"]


@dataclass
class Edge:
    """A running edge: its control plane (``kubectl``, ``get``) and host kubelet."""

    plane: ControlPlane
    kubelet: HostKubelet

    @property
    def kubeconfig(self) -> Path:
        return self.plane.admin_kubeconfig

    def stop(self) -> None:
        self.kubelet.stop()
        self.plane.stop()


def start_edge(root: Path, image_env: dict[str, dict[str, str]] | None = None) -> Edge:
    """Start a control plane and its host kubelet under ``root`` (stopped on failure);
    ``image_env``: extra environment for the host processes of some images (by image name,
    e.g. ``{"edge-sync": {"HEARTBEAT_INTERVAL": "2"}}``)."""
    plane = start_control_plane(root)
    try:
        kubelet = HostKubelet(root, plane.url, plane.pki.ca_crt, plane.admin_kubeconfig,
                              image_env=dict(image_env or {})).start()
    except BaseException:
        plane.stop()
        raise
    return Edge(plane, kubelet)


@contextmanager
def started_edges(roots: Mapping[str, Path],
                  image_env: dict[str, dict[str, str]] | None = None
                  ) -> Iterator[dict[str, Edge]]:
    """An edge per name (each under its root in ``roots``), started side by side; every
    one that started is stopped on exit, or at once when another failed to start."""
    with ThreadPoolExecutor(len(roots)) as pool:
        futures = {name: pool.submit(start_edge, root, image_env)
                   for name, root in roots.items()}
    started = {name: f.result() for name, f in futures.items() if f.exception() is None}
    try:
        for future in futures.values():
            future.result()  # the first failure, once the others are in `started`
        yield started
    finally:
        for edge in started.values():
            edge.stop()
