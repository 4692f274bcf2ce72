"""The real-edge suite (``make test-edge``): our stack and a real edge built by ``make edge-tools``.

Every test here is marked ``edge``. One stack and one edge serve a module: the stack runs
air-gapped, with a Flux export made by the pinned ``flux install --export`` and the Sealed
Secrets chart from the pinned controller's module imported into the central repos, so the
edge reaches nothing but our services.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import edgetools
from harness.realedge import Edge, start_edge
from harness.servers import ADMIN_PASSWORD, plain_env, run_command
from harness.stack import Stack, start_stack, wait_for
from tests.toolchain import path_with, tool

FPLUS = str(Path(sys.executable).parent / "fplus")
# What the edge runs of Flux: the CLI's export is limited to the controllers it builds.
FLUX_COMPONENTS = "source-controller,kustomize-controller,helm-controller"
EDGE_TOOLS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl",
              "kwok", "source-controller", "kustomize-controller", "helm-controller", "flux",
              "controller", "kubeseal")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.edge)


@pytest.fixture(scope="session")
def edge_tools() -> None:
    """Skip (naming the build) unless every pinned component is built."""
    for name in EDGE_TOOLS:
        tool(name)


def flux_export(directory: Path, of: str = "flux") -> Path:
    """``flux install --export`` of the pinned CLI ``of``, written to a file."""
    done = subprocess.run([str(edgetools.binary("flux", of=of)), "install", "--export",
                           f"--components={FLUX_COMPONENTS}"], capture_output=True,
                          text=True, timeout=120, check=True)
    path = directory / f"{of}-install.yaml"
    path.write_text(done.stdout)
    return path


def import_central(stack: Stack, command: str, source: Path, *options: str) -> None:
    """``cluster-manager import-chart|import-flux`` as the administrator."""
    done = run_command("fplus.cluster_manager.cli", command, str(source), "--config-store",
                       stack.store.url, "--data-dir", str(stack.root / "cm"), "--git",
                       stack.git.url, "--git-repos", str(stack.repos), *options,
                       env={**_env(), "FPLUS_ADMIN_PASSWORD": ADMIN_PASSWORD}, timeout=120)
    assert done.returncode == 0, done.stderr


def _env() -> dict[str, str]:
    return plain_env()


@pytest.fixture(scope="module")
def manager_args(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ...]:
    """More ``cluster-manager serve`` arguments for a module's stack (a module may
    override this fixture)."""
    return ()


@pytest.fixture(scope="module")
def edge_stack(edge_tools: None, manager_args: tuple[str, ...],
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Our stack, air-gapped, with the pinned Flux export and Sealed Secrets chart imported."""
    root = tmp_path_factory.mktemp("edge-stack")
    export = flux_export(root)
    stack = start_stack(root, manager_extra=("--air-gapped", "--flux-install-file",
                                              str(export), *manager_args))
    try:
        import_central(stack, "import-flux", export)
        chart = edgetools.component("sealed-secrets").source / "helm" / "sealed-secrets"
        import_central(stack, "import-chart", chart)
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def edge(edge_tools: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Edge]:
    running = start_edge(tmp_path_factory.mktemp("edge"))
    yield running
    running.stop()


class Fplus:
    """The real ``fplus`` command, logged in to a stack as the administrator."""

    def __init__(self, stack: Stack, home: Path) -> None:
        self.env = {**_env(), "XDG_CONFIG_HOME": str(home / "config"), "NO_COLOR": "1"}
        self("login", stack.manager.url, "--config-store", stack.store.url,
             "--password-stdin", stdin=ADMIN_PASSWORD + "\n")

    def __call__(self, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run([FPLUS, *args], env=self.env, input=stdin, capture_output=True,
                              text=True, timeout=180, check=False)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "-o", "json"))


@pytest.fixture(scope="module")
def fplus(edge_stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Fplus:
    return Fplus(edge_stack, tmp_path_factory.mktemp("fplus-home"))


def run_bootstrap(edge: Edge, script: Path) -> subprocess.CompletedProcess[str]:
    """The bootstrap script as an operator runs it: ``sh FILE -y`` where the pinned kubectl
    reaches the edge."""
    env = {**_env(), "KUBECONFIG": str(edge.kubeconfig), "PATH": path_with("kubectl")}
    return subprocess.run(["sh", str(script), "-y"], env=env, capture_output=True, text=True,
                          timeout=600, check=False, stdin=subprocess.DEVNULL)


def condition(obj: dict[str, Any] | None, kind: str = "Ready") -> dict[str, Any]:
    """The named status condition of an object ({} when it has none)."""
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return c
    return {}


def wait_ready(edge: Edge, resource: str, namespace: str, timeout: float = 180) -> dict:
    """Wait for ``resource`` (``kind/name``) to be Ready=True; return it. On timeout, the
    assertion names the last condition the real controller wrote."""
    last: dict[str, Any] = {}

    def ready() -> dict[str, Any] | None:
        nonlocal last
        last = edge.plane.get("-n", namespace, resource) or {}
        return last if condition(last).get("status") == "True" else None

    try:
        return wait_for(ready, timeout=timeout, what=f"{resource} Ready")
    except AssertionError:
        raise AssertionError(f"{resource} not Ready: {condition(last)}; kubelet errors: "
                             f"{edge.kubelet.errors[-3:]}") from None


def _why_not_applied(edge: Edge, namespace: str = "fplus-edge") -> str:
    """What the self-link's source and Kustomization and the host processes say (for a
    bootstrap that failed)."""
    said = [f"{kind}: {condition(edge.plane.get('-n', namespace, f'{kind}/self-link'))}"
            for kind in ("gitrepository", "kustomization")]
    for (ns, deployment), (_, process) in list(edge.kubelet.processes.items()):
        state = "running" if process.running() else "ended"
        said.append(f"{ns}/{deployment}: {state}; {process.tail(3)}")
    return "\n".join(["", *said, f"kubelet errors: {edge.kubelet.errors[-3:]}"])


def bootstrap_done(edge: Edge, fplus: Fplus, name: str, script: Path) -> str:
    """Fetch cluster ``name``'s script with ``fplus`` into ``script``, run it on ``edge``;
    it must end ``Done.``. Its output."""
    fplus("cluster", "bootstrap", name, "--script", str(script))
    done = run_bootstrap(edge, script)
    assert done.returncode == 0, done.stdout + done.stderr + _why_not_applied(edge)
    assert done.stdout.rstrip().endswith("Done."), done.stdout
    return done.stdout


def bootstrap(edge: Edge, fplus: Fplus, name: str, scratch: Path,
              *create: str) -> dict[str, Any]:
    """Create cluster ``name`` (``fplus cluster create`` options ``create``), run its
    bootstrap script on ``edge`` and wait until Flux has applied its repo; the cluster as
    ``fplus cluster get`` shows it."""
    cluster = fplus.json("cluster", "create", name, *create, "--wait")
    bootstrap_done(edge, fplus, name, scratch / f"{name}-bootstrap.sh")
    wait_ready(edge, "kustomization/self-link", cluster["spec"]["namespace"])
    return fplus.json("cluster", "get", name)


def wait_applied(edge: Edge, fplus: Fplus, name: str, timeout: float = 240) -> str:
    """Wait until the edge's self-link Kustomization applied the repo's head; the head."""
    cluster = fplus.json("cluster", "get", name)
    namespace, head = cluster["spec"]["namespace"], cluster["repoCommit"]
    reconcile_now(edge, namespace, "gitrepository/self-link")
    try:
        wait_for(lambda: (edge.plane.get("-n", namespace, "kustomization/self-link") or {})
                 .get("status", {}).get("lastAppliedRevision") == f"main@sha1:{head}",
                 timeout=timeout, what=f"{name}'s edge to apply {head}")
    except AssertionError as exc:  # say where Flux stands, and whether the head moved on
        now = fplus.json("cluster", "get", name)["repoCommit"]
        source, applied = (edge.plane.get("-n", namespace, f"{kind}/self-link") or {}
                           for kind in ("gitrepository", "kustomization"))
        raise AssertionError(
            f"{exc}; the repo is now at {now}; GitRepository artifact "
            f"{source.get('status', {}).get('artifact', {}).get('revision')}, "
            f"{condition(source)}; Kustomization {condition(applied)}") from None
    return head


def reconcile_now(edge: Edge, namespace: str, resource: str) -> None:
    """What ``flux reconcile`` does: ask the controller to reconcile ``resource`` now."""
    edge.plane.kubectl("-n", namespace, "annotate", "--overwrite", resource,
                       f"reconcile.fluxcd.io/requestedAt={time.time()}")
