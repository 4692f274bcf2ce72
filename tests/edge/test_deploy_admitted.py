"""The central services' manifests (``deploy/``) are admitted by a real API server.

Each build (the example overlay with CloudNativePG, and the same without the operator) is
applied with ``kubectl apply --dry-run=server``: the API server's validation, defaulting
and admission run on every object, against the CloudNativePG CRD from ``../shared/crds``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.realedge import Edge
from harness.stack import wait_for
from tests.deploy.conftest import DEPLOY, Objects, _without_operator, kustomize
from tests.edge.conftest import condition

CNPG_CRD = Path(__file__).resolve().parents[3] / "shared" / "crds" / \
    "postgresql.cnpg.io_clusters.yaml"


@pytest.fixture(scope="module")
def with_cnpg(edge: Edge) -> Edge:
    if not CNPG_CRD.is_file():
        pytest.skip(f"the CloudNativePG CRD is not at {CNPG_CRD}")
    edge.plane.kubectl("apply", "--server-side", "-f", str(CNPG_CRD))
    wait_for(lambda: condition(edge.plane.get("crd/clusters.postgresql.cnpg.io"),
                               "Established").get("status") == "True",
             what="the CloudNativePG CRD")
    return edge


def _admitted(edge: Edge, objects: Objects) -> str:
    """Create the namespaces for real (a dry run does not keep them), dry-run the rest."""
    names = {o["metadata"].get("namespace") for o in objects} - {None}
    names |= {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    edge.plane.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                      for n in sorted(names)])
    done = edge.plane.kubectl("apply", "--dry-run=server", "-f", "-", check=False,
                              stdin=yaml.safe_dump_all(objects))
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("build", ["example", "without-operator"])
def test_deploy_builds_are_admitted(with_cnpg: Edge, build: str, tmp_path: Path) -> None:
    overlay = DEPLOY / "overlays" / "example" if build == "example" else \
        _without_operator(tmp_path)
    objects = kustomize(overlay)
    out = _admitted(with_cnpg, objects)
    assert out.count("(server dry run)") == len(objects), out
