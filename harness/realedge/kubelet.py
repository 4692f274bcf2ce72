"""A kubelet for the few images the edge really runs: their Deployments as host processes.

kwok plays the kubelet for every Pod (scheduled, Running, Ready, no process). For the
images whose behaviour the tests are about (Flux's controllers, the Sealed Secrets
controller, Edge Sync) this kubelet also runs the real binary, the way a kubelet would:
the Deployment's args and env (``valueFrom`` Secrets, ConfigMaps and fields resolved,
``$(VAR)`` expanded), Secret and ConfigMap volumes as files, and the ServiceAccount's token
at ``/var/run/secrets/kubernetes.io/serviceaccount`` inside a private mount namespace, with
``KUBERNETES_SERVICE_HOST``/``PORT`` naming the API server. So each process is
authenticated as its ServiceAccount and the RBAC the manifests grant is the RBAC that is
checked. What a container would isolate (file system, network, users) is not: each listens
on its own loopback ports instead of the Pod's, which the args say.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes

from harness import edgetools
from harness.realedge.processes import HostProcess, stop_all
from harness.servers import free_port

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# Inside the process's own mount namespace: a fresh /run holding only its token.
IN_POD_SETUP = (
    'mount -t tmpfs -o size=1m,mode=0755 tmpfs /run && mkdir -p "$1" && '
    'cp "$0"/* "$1"/ && shift && exec "$@"')


@dataclass
class PodRun:
    """What one Deployment's Pod needs to run as a host process."""

    namespace: str
    deployment: str
    container: dict[str, Any]
    workdir: Path
    ports: dict[str, int]

    def port(self, name: str) -> int:
        """A loopback port kept for this Deployment across restarts for a new spec (chosen
        again after its process ended by itself: another process may have taken it)."""
        return self.ports.setdefault(name, free_port())

    def args(self, overrides: dict[str, str]) -> list[str]:
        """The container's args without the flags we override, then ours (container paths)."""
        kept, skip_value = [], False
        for arg in self.container.get("args") or []:
            if skip_value:
                skip_value = False
                continue
            flag = arg.split("=", 1)[0]
            if flag in overrides:
                skip_value = "=" not in arg and flag in VALUE_FLAGS
                continue
            kept.append(arg)
        return kept + [f"{flag}={value}" for flag, value in overrides.items()]


VALUE_FLAGS = {"--listen-addr", "--listen-metrics-addr"}  # given as two args by the chart


@dataclass(frozen=True)
class HostCommand:
    """The host side of a command (interpreter, binary, module) and the Pod's arguments.

    Only ``pod_args`` come from the Pod spec, so only they name container paths that the
    kubelet maps to the volume directories holding them; the host side is a host path
    already, wherever the checkout lives (under ``/tmp`` too, where a Pod may mount an
    emptyDir).
    """

    host: list[str]
    pod_args: list[str]

    def argv(self, mounts: dict[str, Path]) -> list[str]:
        return [*self.host, *(_rewrite_arg(a, mounts) for a in self.pod_args)]


def _flux(binary: str) -> Callable[[PodRun], HostCommand]:
    def command(run: PodRun) -> HostCommand:
        overrides = {"--metrics-addr": f"127.0.0.1:{run.port('metrics')}",
                     "--health-addr": f"127.0.0.1:{run.port('health')}",
                     "--enable-leader-election": "false", "--events-addr": ""}
        if binary == "source-controller":  # --storage-path stays: its volume is a directory
            storage = f"127.0.0.1:{run.port('storage')}"
            overrides |= {"--storage-addr": storage, "--storage-adv-addr": storage}
        return HostCommand([str(edgetools.binary(binary))], run.args(overrides))
    return command


def _sealed_secrets(run: PodRun) -> HostCommand:
    return HostCommand([str(edgetools.binary("controller", of="sealed-secrets"))], run.args({
        "--listen-addr": f"127.0.0.1:{run.port('http')}",
        "--listen-metrics-addr": f"127.0.0.1:{run.port('metrics')}"}))


def _edge_sync(run: PodRun) -> HostCommand:
    return HostCommand([sys.executable, "-m", "fplus.edge_sync.cli", "run"], run.args({}))


# Image repository (last path segment, without tag) → the host command that stands for it.
HOST_IMAGES: dict[str, Callable[[PodRun], HostCommand]] = {
    "source-controller": _flux("source-controller"),
    "kustomize-controller": _flux("kustomize-controller"),
    "helm-controller": _flux("helm-controller"),
    "sealed-secrets-controller": _sealed_secrets,
    "edge-sync": _edge_sync,
}


def image_name(image: str) -> str:
    """``ghcr.io/fluxcd/source-controller:v1.9.5`` → ``source-controller``."""
    return re.split(r"[:@]", image.rsplit("/", 1)[-1])[0]


@dataclass
class HostKubelet:
    """Keeps one host process per Deployment of a known image, as its spec says."""

    root: Path
    api_url: str
    ca_crt: Path
    admin_kubeconfig: Path
    processes: dict[tuple[str, str], tuple[str, HostProcess]] = field(default_factory=dict)
    ports: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    """The last passes' failures (the tests print them when the edge misbehaves)."""
    image_env: dict[str, dict[str, str]] = field(default_factory=dict)
    """Extra environment by image name (:data:`HOST_IMAGES`), over the Pod's own."""
    held: set[str] = field(default_factory=set)
    """Image names not run (see :meth:`hold`)."""
    images: dict[tuple[str, str], str] = field(default_factory=dict)
    """The image name each Deployment's process runs."""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        api = kubernetes.config.new_client_from_config(config_file=str(self.admin_kubeconfig))
        self.apps = kubernetes.client.AppsV1Api(api)
        self.core = kubernetes.client.CoreV1Api(api)

    def start(self) -> HostKubelet:
        self._thread = threading.Thread(target=self._loop, name="host-kubelet", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            try:
                self.sync()
            except Exception as error:  # a kubelet keeps going; the next pass retries
                self.errors.append(repr(error))
                del self.errors[:-20]

    def sync(self) -> None:
        """One pass: start, restart or stop processes to match the Deployments."""
        wanted = {}
        # Any: a listed Deployment has the spec and metadata its model types as optional
        deployments: list[Any] = self.apps.list_deployment_for_all_namespaces().items
        for d in deployments:
            containers = d.spec.template.spec.containers
            runner = next((image_name(c.image) for c in containers
                           if image_name(c.image) in HOST_IMAGES), None)
            if runner in self.held:
                continue  # as if its node were down
            if runner and (d.spec.replicas is None or d.spec.replicas > 0):
                template = self.apps.api_client.sanitize_for_serialization(d.spec.template)
                wanted[(d.metadata.namespace, d.metadata.name)] = (runner, template)
        for key in set(self.processes) - set(wanted):
            self.processes[key][1].stop()
            del self.processes[key]  # after the stop: hold() waits for the process's end
        for key, (runner, template) in wanted.items():
            digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
            current = self.processes.get(key)
            if current and current[0] == digest and current[1].running():
                continue
            if current:
                self.processes.pop(key)[1].stop()
                if current[0] == digest:  # it ended by itself: perhaps a port of its was taken
                    self.ports.pop(key, None)  # meanwhile (a free port is only free when chosen)
            try:
                self.processes[key] = (digest, self._run(key, runner, template))
                self.images[key] = runner
            except kubernetes.client.ApiException:
                continue  # its ServiceAccount, Secret or ConfigMap is not there yet

    def _run(self, key: tuple[str, str], runner: str, template: dict[str, Any]) -> HostProcess:
        namespace, name = key
        spec = template["spec"]
        container = next(c for c in spec["containers"] if image_name(c["image"]) == runner)
        workdir = self.root / "pods" / f"{namespace}.{name}"
        run = PodRun(namespace, name, container, workdir, self.ports.setdefault(key, {}))
        token_dir = self._token(namespace, spec.get("serviceAccountName") or "default", workdir)
        mounts = self._volumes(namespace, spec, container, workdir)
        env = self._env(namespace, name, container, mounts)
        env |= {"KUBERNETES_SERVICE_HOST": "127.0.0.1",
                "KUBERNETES_SERVICE_PORT": self.api_url.rsplit(":", 1)[1], "HOME": str(workdir)}
        env |= self.image_env.get(runner, {})
        argv = HOST_IMAGES[runner](run).argv(mounts)
        log = self.root / "logs" / f"{namespace}.{name}.log"
        return HostProcess(f"{namespace}/{name}", [
            "unshare", "--mount", "--propagation", "private", "--", "sh", "-c", IN_POD_SETUP,
            str(token_dir), SERVICE_ACCOUNT_DIR, *argv], log, env).start()

    def _token(self, namespace: str, account: str, workdir: Path) -> Path:
        """The projected token files a Pod of ``account`` gets."""
        request: Any = {"spec": {"expirationSeconds": 86400}}  # the client sends dicts as they are
        token: Any = self.core.create_namespaced_service_account_token(account, namespace, request)
        directory = workdir / "serviceaccount"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "token").write_text(token.status.token)
        (directory / "namespace").write_text(namespace)
        (directory / "ca.crt").write_bytes(self.ca_crt.read_bytes())
        return directory

    def _data(self, kind: str, namespace: str, name: str) -> dict[str, str]:
        if kind == "secret":
            obj = self.core.read_namespaced_secret(name, namespace)
            return {k: base64.b64decode(v).decode() for k, v in (obj.data or {}).items()}
        return dict(self.core.read_namespaced_config_map(name, namespace).data or {})

    def _volumes(self, namespace: str, spec: dict[str, Any], container: dict[str, Any],
                 workdir: Path) -> dict[str, Path]:
        """Mount path → local directory for the container's Secret, ConfigMap, emptyDir."""
        volumes = {v["name"]: v for v in spec.get("volumes") or []}
        mounts = {}
        for mount in container.get("volumeMounts") or []:
            volume = volumes.get(mount["name"], {})
            local = workdir / "volumes" / mount["name"]
            local.mkdir(parents=True, exist_ok=True)
            for kind, ref in (("secret", "secretName"), ("configMap", "name")):
                if kind in volume:
                    source = volume[kind]
                    for key, value in self._data(kind.lower(), namespace, source[ref]).items():
                        (local / key).write_text(value)
            mounts[mount["mountPath"]] = local
        return mounts

    def _env(self, namespace: str, name: str, container: dict[str, Any],
             mounts: dict[str, Path]) -> dict[str, str]:
        env: dict[str, str] = {}
        for source in container.get("envFrom") or []:
            for kind in ("configMapRef", "secretRef"):
                if kind in source:
                    env |= self._data("secret" if kind == "secretRef" else "configmap",
                                      namespace, source[kind]["name"])
        fields = {"metadata.namespace": namespace, "metadata.name": f"{name}-host",
                  "spec.nodeName": "host", "status.podIP": "127.0.0.1"}
        for var in container.get("env") or []:
            ref = var.get("valueFrom") or {}
            if "value" in var:
                env[var["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env.get(m[1], m[0]),
                                          var["value"])
            elif "fieldRef" in ref:
                env[var["name"]] = fields.get(ref["fieldRef"]["fieldPath"], "")
            elif "secretKeyRef" in ref or "configMapKeyRef" in ref:
                kind = "secret" if "secretKeyRef" in ref else "configmap"
                key_ref = ref.get("secretKeyRef") or ref["configMapKeyRef"]
                env[var["name"]] = self._data(kind, namespace, key_ref["name"])[key_ref["key"]]
        return {k: _rewrite(v, mounts) for k, v in env.items()}

    def hold(self, image: str, timeout: float = 30.0) -> None:
        """Stop running ``image``'s Deployments until :meth:`release` (as if their node went
        down; the Deployments stay as they are); returns once the next passes stopped them."""
        self.held.add(image)
        deadline = time.monotonic() + timeout
        while any(self.images.get(key) == image for key in list(self.processes)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{image} still runs {timeout:.0f} s after its hold")
            time.sleep(0.2)

    def release(self, image: str) -> None:
        """Run ``image``'s Deployments again (from the next pass)."""
        self.held.discard(image)

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)
        stop_all([process for _, process in self.processes.values()])
        self.processes.clear()


def _rewrite_arg(arg: str, mounts: dict[str, Path]) -> str:
    """``--flag=/mounted/path`` (or a bare path) with the path on the host."""
    flag, equals, value = arg.partition("=")
    if equals and flag.startswith("-"):
        return f"{flag}={_rewrite(value, mounts)}"
    return _rewrite(arg, mounts)


def _rewrite(value: str, mounts: dict[str, Path]) -> str:
    """A container path under a volume mount → the host directory that holds it."""
    for mount_path, local in sorted(mounts.items(), key=lambda m: -len(m[0])):
        if value == mount_path or value.startswith(mount_path.rstrip("/") + "/"):
            return str(local) + value[len(mount_path.rstrip("/")):]
    return value
