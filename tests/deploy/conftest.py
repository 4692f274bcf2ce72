"""The deploy/ tree built with the real ``kubectl kustomize``, once per session.

Three builds: the base alone, the example overlay (CloudNativePG), and the base with the
``postgres-statefulset`` component (clusters without the operator), from an overlay written to
a temp dir that points at the repository's directories.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.toolchain import tool

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
Objects = list[dict[str, Any]]


def kustomize(directory: Path) -> Objects:
    """Every object ``kubectl kustomize directory`` prints (it must succeed)."""
    done = subprocess.run([tool("kubectl"), "kustomize", str(directory)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, f"kubectl kustomize {directory} failed:\n{done.stderr}"
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def _without_operator(tmp: Path) -> Path:
    overlay = tmp / "without-operator"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "namespace": "fplus",
        "resources": [os.path.relpath(DEPLOY / "base", overlay)],  # kustomize wants relative
        "components": [os.path.relpath(DEPLOY / "components" / "postgres-statefulset",
                                       overlay)]}))
    return overlay


@pytest.fixture(scope="session")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Objects]]:
    """Build name → its objects."""
    tmp = tmp_path_factory.mktemp("deploy")
    yield {"base": kustomize(DEPLOY / "base"),
           "example": kustomize(DEPLOY / "overlays" / "example"),
           "without-operator": kustomize(_without_operator(tmp))}


def of_kind(objects: Objects, *kinds: str) -> Objects:
    """The objects of these kinds."""
    return [obj for obj in objects if obj["kind"] in kinds]


WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    """The pod spec of a workload object."""
    template = workload["spec"]["template"]
    if workload["kind"] == "CronJob":
        template = workload["spec"]["jobTemplate"]["spec"]["template"]
    return template["spec"]


def containers(spec: dict[str, Any]) -> Objects:
    """Init and app containers of a pod spec."""
    return [*spec.get("initContainers", []), *spec["containers"]]
