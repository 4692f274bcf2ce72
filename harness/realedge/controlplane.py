"""etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on loopback.

The control plane is the real one from the pinned Kubernetes release: authentication by
client certificate and service-account token, RBAC authorisation, admission, the
controllers that turn Deployments into ReplicaSets into Pods, garbage collection and
namespace deletion, and the scheduler placing Pods on nodes. kwok plays the kubelets,
their API included: every node's InternalIP is 127.0.0.1 and its kubelet port kwok's
server, which the API server reaches the way it reaches kubelets (its kubelet client
certificate, kwok's serving certificate verified against the edge's CA), so ``kubectl
logs``, ``exec`` and ``port-forward`` work on kwok's Pods as kwok's ClusterLogs,
ClusterExec and ClusterPortForward objects say (``harness.realedge.streams``).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

from harness import edgetools
from harness.realedge.pki import Pki, make_pki
from harness.realedge.processes import HostProcess, stop_all
from harness.servers import free_port

SERVICE_CIDR = "10.96.0.0/16"
FAKE_NODE = "kwok.x-k8s.io/node"
SPECIALISED = "factoryplus.app.amrc.co.uk/specialised"
# kwok's objects that say what a Pod's logs, exec and port-forward reach (cluster-scoped),
# by kind: their plural (resource) names.
STREAM_KINDS = {"ClusterLogs": "clusterlogs", "ClusterExec": "clusterexecs",
                "ClusterPortForward": "clusterportforwards"}


@dataclass(frozen=True)
class NodeSpec:
    """A fake node: its name, extra labels and taints (``key=value:Effect``)."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[str, ...] = ()

    def manifest(self) -> dict[str, Any]:
        taints = []
        for taint in self.taints:
            key_value, effect = taint.rsplit(":", 1)
            key, _, value = key_value.partition("=")
            taints.append({"key": key, "value": value, "effect": effect})
        return {  # kwok's node-initialize stage writes the status (Ready, capacity, info)
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": self.name, "annotations": {FAKE_NODE: "fake"},
                         "labels": {"kubernetes.io/hostname": self.name,
                                    "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                                    "type": "kwok", **self.labels}},
            "spec": {"taints": taints},
        }


# Like a small factory edge: a control-plane node, a worker, a specialised (tainted) worker.
EDGE_NODES = (NodeSpec("edge-cp", {"node-role.kubernetes.io/control-plane": ""}),
              NodeSpec("edge-worker-1"),
              NodeSpec("edge-plc-1", {"factoryplus.app.amrc.co.uk/specialised": "plc"},
                       (f"{SPECIALISED}=plc:NoSchedule",)))


def kubeconfig(server: str, ca: Path, *, cert: Path | None = None, key: Path | None = None,
               token: str | None = None, namespace: str = "default") -> str:
    """A kubeconfig (YAML text) for one user of one cluster."""
    user: dict[str, str] = {"token": token} if token else {
        "client-certificate": str(cert), "client-key": str(key)}
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "edge",
        "clusters": [{"name": "edge", "cluster": {"server": server,
                                                   "certificate-authority": str(ca)}}],
        "users": [{"name": "user", "user": user}],
        "contexts": [{"name": "edge", "context": {"cluster": "edge", "user": "user",
                                                  "namespace": namespace}}]})


@dataclass
class ControlPlane:
    """A running control plane and an administrator's kubeconfig for it."""

    root: Path
    pki: Pki
    api_port: int
    kubelet_port: int  # kwok's server: every node's kubelet endpoint, on 127.0.0.1
    processes: list[HostProcess] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    @property
    def kubelet_url(self) -> str:
        """kwok's kubelet API (HTTPS, its certificate from the edge's CA)."""
        return f"https://127.0.0.1:{self.kubelet_port}"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.root / "admin.kubeconfig"

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True,
                kubeconfig_path: Path | None = None, timeout: float = 120,
                env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """The pinned kubectl as the administrator (or with ``kubeconfig_path``; ``env``:
        more environment, e.g. ``KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false``)."""
        done = subprocess.run(
            [str(edgetools.binary("kubectl")), "--kubeconfig",
             str(kubeconfig_path or self.admin_kubeconfig), *args],
            input=stdin, capture_output=True, text=True, timeout=timeout, check=False,
            env={**os.environ, **env} if env else None)
        if check and done.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done

    def get(self, *args: str) -> Any:
        """``kubectl get … -o json`` parsed (None when not found)."""
        done = self.kubectl("get", *args, "-o", "json", check=False)
        if done.returncode != 0:
            if "NotFound" in done.stderr or "not found" in done.stderr:
                return None
            raise RuntimeError(f"kubectl get {' '.join(args)}: {done.stderr.strip()}")
        return json.loads(done.stdout)

    def apply(self, objects: Sequence[dict[str, Any]]) -> None:
        self.kubectl("apply", "--server-side", "-f", "-",
                     stdin=yaml.safe_dump_all(list(objects)))

    def ready(self) -> bool:
        r = requests.get(f"{self.url}/readyz", verify=str(self.pki.ca_crt), timeout=2,
                         cert=(str(self.pki.admin_crt), str(self.pki.admin_key)))
        return r.status_code == 200

    def stop(self) -> None:
        stop_all(list(reversed(self.processes)))
        self.processes.clear()


def _etcd(root: Path) -> tuple[HostProcess, str]:
    client, peer = free_port(), free_port()
    url = f"http://127.0.0.1:{client}"
    process = HostProcess("etcd", [
        str(edgetools.binary("etcd")), "--name", "edge", "--data-dir", str(root / "etcd"),
        "--listen-client-urls", url, "--advertise-client-urls", url,
        "--listen-peer-urls", f"http://127.0.0.1:{peer}",
        "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
        "--initial-cluster", f"edge=http://127.0.0.1:{peer}",
        "--unsafe-no-fsync", "--log-level", "warn"], root / "logs" / "etcd.log").start()
    process.wait_ready(lambda: requests.get(f"{url}/health", timeout=1).ok)
    return process, url


def _apiserver(root: Path, pki: Pki, etcd_url: str, port: int) -> HostProcess:
    return HostProcess("kube-apiserver", [
        str(edgetools.binary("kube-apiserver")), f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={port}",
        f"--tls-cert-file={pki.serving_crt}", f"--tls-private-key-file={pki.serving_key}",
        f"--client-ca-file={pki.ca_crt}", "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}", "--allow-privileged=true",
        f"--cert-dir={root / 'apiserver'}", "--profiling=false",
        "--enable-priority-and-fairness=false",
        # kubelets (kwok) as a cluster reaches them: by InternalIP, the kubelet's serving
        # certificate verified, the API server's own client certificate presented
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-certificate-authority={pki.ca_crt}",
        f"--kubelet-client-certificate={pki.kubelet_client_crt}",
        f"--kubelet-client-key={pki.kubelet_client_key}"],
        root / "logs" / "kube-apiserver.log").start()


def _controllers(plane: ControlPlane) -> None:
    """Start the controller manager, the scheduler and kwok (each in ``plane.processes``
    once started, so a failure stops it)."""
    root, pki, admin = plane.root, plane.pki, plane.admin_kubeconfig
    # No cloud, no node IPAM. The node lifecycle controller lifts the not-ready taint new
    # nodes get and watches kwok's heartbeats, as it watches kubelets'.
    kcm = HostProcess("kube-controller-manager", [
        str(edgetools.binary("kube-controller-manager")), f"--kubeconfig={admin}",
        "--leader-elect=false", "--secure-port=0", f"--root-ca-file={pki.ca_crt}",
        f"--service-account-private-key-file={pki.sa_key}",
        "--use-service-account-credentials=false",
        "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service,-route",
        "--concurrent-gc-syncs=5"], root / "logs" / "kube-controller-manager.log").start()
    plane.processes.append(kcm)
    scheduler = HostProcess("kube-scheduler", [
        str(edgetools.binary("kube-scheduler")), f"--kubeconfig={admin}",
        f"--authentication-kubeconfig={admin}", f"--authorization-kubeconfig={admin}",
        "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={free_port()}"],
        root / "logs" / "kube-scheduler.log").start()
    plane.processes.append(scheduler)
    stages = root / "kwok-stages.yaml"
    kwok_source = edgetools.component("kwok").source / "kustomize" / "stage"
    stages.write_text("\n---\n".join(
        p.read_text() for stage in ("node/fast", "node/heartbeat", "pod/fast")
        for p in sorted((kwok_source / stage).glob("*.yaml")) if p.name != "kustomization.yaml"))
    # kwok's server (its debugging handlers are on by default) is every node's kubelet:
    # --node-port is the daemonEndpoints port its node stage writes, --server-address keeps
    # it on loopback. It serves HTTP and HTTPS on the one port; the API server uses HTTPS.
    plane.processes.append(HostProcess("kwok", [
        str(edgetools.binary("kwok")), f"--kubeconfig={admin}", f"--config={stages}",
        f"--manage-nodes-with-annotation-selector={FAKE_NODE}=fake",
        "--node-ip=127.0.0.1", f"--node-port={plane.kubelet_port}",
        f"--server-address=127.0.0.1:{plane.kubelet_port}",
        f"--tls-cert-file={pki.kubelet_crt}", f"--tls-private-key-file={pki.kubelet_key}",
        f"--enable-crds={','.join(STREAM_KINDS)}"], root / "logs" / "kwok.log").start())


def _install_stream_crds(plane: ControlPlane) -> None:
    """kwok's CRDs for :data:`STREAM_KINDS`, from its module, applied and Established."""
    bases = edgetools.component("kwok").source / "kustomize" / "crd" / "bases"
    files = [bases / f"kwok.x-k8s.io_{plural}.yaml" for plural in STREAM_KINDS.values()]
    plane.kubectl("apply", "--server-side", *(arg for f in files for arg in ("-f", str(f))))
    plane.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                  *(f"crd/{plural}.kwok.x-k8s.io" for plural in STREAM_KINDS.values()))


def start_control_plane(root: Path, nodes: Sequence[NodeSpec] = EDGE_NODES) -> ControlPlane:
    """Start everything on free loopback ports under ``root``; nodes Ready on return.

    On failure, whatever started is stopped before the error is raised.
    """
    pki = make_pki(root / "pki")
    plane = ControlPlane(root, pki, free_port(), free_port())
    try:
        etcd, etcd_url = _etcd(root)
        plane.processes.append(etcd)
        api = _apiserver(root, pki, etcd_url, plane.api_port)
        plane.processes.append(api)
        plane.admin_kubeconfig.write_text(kubeconfig(plane.url, pki.ca_crt,
                                                     cert=pki.admin_crt, key=pki.admin_key))
        api.wait_ready(plane.ready, timeout=90)
        # kwok's stream CRDs go in while everything else starts (its watches of them retry
        # until they are there): no later start for it
        with ThreadPoolExecutor(1) as pool:
            crds = pool.submit(_install_stream_crds, plane)
            _controllers(plane)
            plane.apply([node.manifest() for node in nodes])
            plane.kubectl("wait", "--for=condition=Ready", "--timeout=60s",
                          *(f"node/{node.name}" for node in nodes))
            # the service-account controller runs: namespaces get their `default` account
            plane.kubectl("wait", "--for=create", "--timeout=60s", "-n", "default",
                          "serviceaccount/default")
            crds.result()
    except BaseException:
        plane.stop()
        raise
    return plane
