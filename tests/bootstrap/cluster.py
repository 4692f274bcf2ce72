"""An edge cluster the real ``kubectl`` reaches: the emulator, a kubeconfig, and the controllers.

:class:`EdgeCluster` runs :class:`~tests.bootstrap.apiserver.KubectlKubernetes` on loopback and
writes a kubeconfig for it in the test's temp dir; scripts run with ``sh`` and the real
``kubectl`` from PATH (``KUBECONFIG``, ``HOME`` and ``TMPDIR`` point into the temp dir; no
terminal unless a test gives one). Nothing tells the script it runs under test.

No controller runs in the emulator, so :class:`Controllers` plays their part: a thread watches
the emulator's state and, as objects appear, sets through the direct API connection what the
real controllers would report: CRDs ``Established`` (the API server), Deployments
``Available`` (kube-controller-manager with running pods), Kustomizations ``Ready``
(kustomize-controller, after ``on_kustomization``). ``hold`` keeps named objects unready.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import http.server
import os
import subprocess
import termios
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

from harness.kube import node
from tests.bootstrap.apiserver import KubectlKubernetes
from tests.edge_sync.emulator import KubeHarness
from tests.toolchain import path_with

CRDS = "apiextensions.k8s.io/v1/customresourcedefinitions"
DEPLOYMENTS = "apps/v1/deployments"
KUSTOMIZATIONS = "kustomize.toolkit.fluxcd.io/v1/kustomizations"
NAMESPACES = "v1/namespaces"
SECRETS = "v1/secrets"
CONTEXT = "edge-admin@line"
SH = "/bin/sh"
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
CONTROLLERS_AGENT = "test-controllers"


def _true(kind: str, reason: str) -> dict[str, str]:
    return {"type": kind, "status": "True", "reason": reason, "message": reason,
            "lastTransitionTime": "2026-01-01T00:00:00Z"}


class Controllers:
    """Marks objects ready as they appear (see the module docstring); a daemon thread."""

    def __init__(self, kube: KubeHarness, *, interval: float = 0.05) -> None:
        self.kube = kube
        self.interval = interval
        self.hold: set[str] = set()
        """``kind/name`` (e.g. ``kustomization/self-link``) never marked ready."""
        self.on_kustomization: Callable[[dict[str, Any]], bool] | None = None
        """Called before a Kustomization is marked Ready; False keeps it unready for now."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="controllers", daemon=True)

    def start(self) -> Controllers:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        session = requests.Session()
        session.headers["User-Agent"] = CONTROLLERS_AGENT
        base = f"http://127.0.0.1:{self.kube.direct_port}"
        while not self._stop.wait(self.interval):
            for path, status in self._due():
                session.patch(base + path + "/status", json={"status": status}, timeout=10,
                              headers={"Content-Type": "application/merge-patch+json"})

    def _due(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for name, crd in self.kube.objects(CRDS, view=_crd_view).items():
            if not _ready(crd, "Established") and f"crd/{name}" not in self.hold:
                spec = crd.get("spec") or {}
                stored = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
                yield (f"/apis/{CRDS}/{name}", {
                    "conditions": [_true("NamesAccepted", "NoConflicts"),
                                   _true("Established", "InitialNamesAccepted")],
                    "acceptedNames": spec.get("names") or {}, "storedVersions": stored})
        for name, deployment in self.kube.objects(DEPLOYMENTS).items():
            namespace = deployment["metadata"]["namespace"]
            if not _ready(deployment, "Available") and f"deployment/{name}" not in self.hold:
                replicas = (deployment.get("spec") or {}).get("replicas", 1)
                yield (f"/apis/{DEPLOYMENTS.rsplit('/', 1)[0]}/namespaces/{namespace}/"
                       f"deployments/{name}", {
                           "conditions": [_true("Available", "MinimumReplicasAvailable")],
                           "replicas": replicas, "readyReplicas": replicas,
                           "availableReplicas": replicas})
        for name, kustomization in self.kube.objects(KUSTOMIZATIONS).items():
            namespace = kustomization["metadata"]["namespace"]
            if _ready(kustomization, "Ready") or f"kustomization/{name}" in self.hold:
                continue
            if self.on_kustomization is not None and not self.on_kustomization(kustomization):
                continue
            yield (f"/apis/{KUSTOMIZATIONS.rsplit('/', 1)[0]}/namespaces/{namespace}/"
                   f"kustomizations/{name}",
                   {"conditions": [_true("Ready", "ReconciliationSucceeded")]})


def _crd_view(crd: dict[str, Any]) -> dict[str, Any]:
    """What the controllers read of a CRD: not its schemas (Flux's come to hundreds of
    kilobytes, and copying them twenty times a second was close to half of these tests'
    own CPU)."""
    spec = crd.get("spec") or {}
    return {"status": crd.get("status"),
            "spec": {"names": spec.get("names"),
                     "versions": [{"name": v.get("name"), "storage": v.get("storage")}
                                  for v in spec.get("versions") or []]}}


def _ready(obj: dict[str, Any], kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


@dataclass
class Run:
    """One run of a script: exit status, output, and the API requests it made."""

    returncode: int
    stdout: str
    stderr: str
    requests: list[tuple[str, str]] = field(default_factory=list)
    """``(method, path)`` of every request the script made (the controllers' left out)."""
    bodies: list[Any] = field(default_factory=list)
    """The JSON bodies of the run's write requests, in order."""
    temp_dirs: dict[str, dict[str, int]] = field(default_factory=dict)
    """Directories seen under TMPDIR while the script ran: name → {file: mode}; the
    directory's own mode under ``"."``."""

    def applied(self, kind: str) -> list[dict[str, Any]]:
        """The objects of ``kind`` as kubectl sent them (create and apply bodies)."""
        return [b for b in self.bodies if isinstance(b, dict) and b.get("kind") == kind]

    @property
    def changes(self) -> list[tuple[str, str]]:
        """The requests that change the cluster."""
        return [r for r in self.requests if r[0] in WRITES]


class EdgeCluster:
    """An emulated edge cluster reached by the real kubectl; see the module docstring."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.scratch = root / "tmp"  # TMPDIR of the scripts: must end up empty
        self.home = root / "home"  # kubectl's discovery cache
        for directory in (self.scratch, self.home):
            directory.mkdir(parents=True, exist_ok=True)
        self.kube = KubeHarness(KubectlKubernetes(), flux_resources=False)  # CRDs serve them
        self.kubeconfig = root / "kubeconfig"
        self.kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": CONTEXT,
            "clusters": [{"name": "line", "cluster": {"server": self.kube.url}}],
            "users": [{"name": "edge-admin", "user": {}}],
            "contexts": [{"name": CONTEXT, "context": {"cluster": "line",
                                                       "user": "edge-admin"}}]}))
        self.kube.put("v1/nodes", None, "edge-node-1", node("edge-node-1", control_plane=True))
        for namespace in ("default", "kube-system"):
            self.add_namespace(namespace)
        self.controllers = Controllers(self.kube).start()

    def close(self) -> None:
        self.controllers.stop()
        self.kube.close()

    # ------------------------------------------------------------------ cluster state
    def add_namespace(self, name: str) -> None:
        self.kube.put(NAMESPACES, None, name,
                      {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def add_secret(self, namespace: str, name: str, data: dict[str, str]) -> None:
        self.kube.put(SECRETS, namespace, name, {
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}})

    def add_deployment(self, namespace: str, name: str) -> None:
        labels = {"app": name}
        self.kube.put(DEPLOYMENTS, namespace, name, {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": name, "image": f"{name}:1"}]}}}})

    def add_crd(self, name: str, versions: list[str]) -> None:
        """A CRD (Established) serving ``versions`` of ``<plural>.<group>`` = ``name``."""
        plural, group = name.split(".", 1)
        kind = {"gitrepositories": "GitRepository", "helmrepositories": "HelmRepository",
                "kustomizations": "Kustomization", "helmreleases": "HelmRelease"}[plural]
        self.kube.put(CRDS, None, name, {
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [{"name": v, "served": True, "storage": i == 0,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}
                                  for i, v in enumerate(versions)]},
            "status": {"conditions": [_true("Established", "InitialNamesAccepted")]}})

    def install_flux(self, served: dict[str, list[str]]) -> None:
        """Flux as installed earlier by someone else: its namespace, helm-controller, CRDs."""
        self.add_namespace("flux-system")
        self.add_deployment("flux-system", "helm-controller")
        for crd, versions in served.items():
            self.add_crd(crd, versions)

    def objects(self, resource: str, namespace: str | None = None) -> dict[str, dict[str, Any]]:
        return self.kube.objects(resource, namespace)

    def has(self, resource: str, namespace: str | None, name: str) -> bool:
        return name in self.objects(resource, namespace)

    def secrets(self, namespace: str) -> dict[str, dict[str, str]]:
        """Secret name → decoded data of every Secret in ``namespace`` (as a kubelet sees it)."""
        return {name: {k: base64.b64decode(v).decode() for k, v in (s.get("data") or {}).items()}
                for name, s in self.objects(SECRETS, namespace).items()}

    # ------------------------------------------------------------------ running
    def env(self, path: str | None = None) -> dict[str, str]:
        # kmock cannot stream a watch-list (initial events ending in a bookmark), which
        # kubectl 1.36's `wait` asks for: it falls back to list-then-watch with the client
        # feature off. The real edge suite (tests/edge) runs kubectl as it ships.
        return {"PATH": path if path is not None else path_with("kubectl"),
                "HOME": str(self.home), "LANG": "C.UTF-8", "TMPDIR": str(self.scratch),
                "KUBECONFIG": str(self.kubeconfig), "KUBE_FEATURE_WatchListClient": "false"}

    def kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The real kubectl against this cluster (for the tests' own checks)."""
        return subprocess.run(["kubectl", *args], env=self.env(), cwd=self.root, text=True,
                              capture_output=True, timeout=60, check=False)

    def run(self, text: str, *args: str, path: str | None = None,
            tty_input: str | None = None, from_stdin: bool = False) -> Run:
        """Run ``text`` as ``sh FILE ARGS`` (``from_stdin``: ``sh -s -- ARGS <FILE``, as
        ``curl … | sh`` does); with ``tty_input``, on a terminal that has it typed."""
        file = self.root / "bootstrap"
        file.write_text(text, encoding="utf-8")
        served = len(self.kube.requests())
        command = [SH, "-s", "--", *args] if from_stdin else [SH, str(file), *args]
        with _watching(self.scratch) as temp_dirs:
            if tty_input is None:
                with file.open("rb") if from_stdin else open(os.devnull, "rb") as stdin:
                    done = subprocess.run(command, env=self.env(path), cwd=self.root,
                                          text=True, capture_output=True, stdin=stdin,
                                          start_new_session=True, timeout=300, check=False)
            else:
                done = self._run_on_terminal(command, tty_input, path)
        assert list(self.scratch.iterdir()) == [], "the script left its temp dir behind"
        made = [r for r in self.kube.requests()[served:]
                if r.headers.get("User-Agent") != CONTROLLERS_AGENT]  # the script's only
        methods = [str(getattr(r.method, "value", r.method)).upper() for r in made]
        return Run(done.returncode, done.stdout, done.stderr,
                   [(m, r.url.path) for m, r in zip(methods, made, strict=True)],
                   [r.data for m, r in zip(methods, made, strict=True) if m in WRITES],
                   temp_dirs)

    def _run_on_terminal(self, command: list[str], typed: str,
                         path: str | None) -> subprocess.CompletedProcess[str]:
        primary, secondary = os.openpty()
        try:
            os.write(primary, typed.encode())

            def take_terminal() -> None:  # in the child: new session, this pty controls it
                os.setsid()
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)

            with subprocess.Popen(command, env=self.env(path), cwd=self.root, text=True,
                                  stdin=secondary, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, preexec_fn=take_terminal) as proc:
                out, err = proc.communicate(timeout=300)
            return subprocess.CompletedProcess(command, proc.returncode, out, err)
        finally:
            os.close(primary)
            os.close(secondary)


@contextlib.contextmanager
def _watching(directory: Path) -> Iterator[dict[str, dict[str, int]]]:
    """Record the subdirectories of ``directory`` and their files' modes until the end."""
    seen: dict[str, dict[str, int]] = {}
    stop = threading.Event()

    def look() -> None:
        while not stop.wait(0.01):
            with contextlib.suppress(OSError):  # the script may remove it meanwhile
                for sub in directory.iterdir():
                    files = {p.name: p.stat().st_mode & 0o777 for p in sub.iterdir()}
                    seen[sub.name] = {".": sub.stat().st_mode & 0o777,
                                      **seen.get(sub.name, {}), **files}

    watcher = threading.Thread(target=look, name="tmp-watcher", daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        stop.set()
        watcher.join(5)


class FileServer:
    """Serves files over HTTP on loopback (a release URL for ``kubectl apply -f URL``)."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files
        self.fetched: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.fetched.append(self.path)
                found = outer.files.get(self.path)
                body = found.read_bytes() if found else b"not found\n"
                self.send_response(200 if found else 404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
