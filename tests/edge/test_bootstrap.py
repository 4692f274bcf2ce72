"""The bootstrap script from ``fplus cluster bootstrap``, unmodified, run with the pinned
kubectl against a real edge: Flux installed from the embedded export, credentials in place,
and the real source- and kustomize-controller pulling and applying the cluster's repo with
them. Run again, it changes nothing."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from fplus.cluster_manager.settings import Settings
from harness import edgetools
from harness.realedge import Edge
from harness.stack import Stack
from tests.edge.conftest import FLUX_COMPONENTS, Fplus, bootstrap_done, wait_ready

CONTROLLERS = FLUX_COMPONENTS.split(",")


def _installed(edge: Edge, namespace: str) -> dict[str, Any]:
    """What a second run must leave alone: Flux's Deployments and the self-link objects."""
    state = {}
    for name in CONTROLLERS:
        d = edge.plane.get("-n", "flux-system", f"deployment/{name}")
        state[name] = (d["metadata"]["generation"], d["spec"]["template"])
    for kind in ("gitrepository", "kustomization"):
        obj = edge.plane.get("-n", namespace, f"{kind}/self-link")
        state[kind] = (obj["metadata"]["generation"], obj["spec"])
    return state


def _only_our_stack(edge: Edge, stack: Stack) -> None:
    """Air-gapped: every source URL names our Git server, every image is one the imported
    Flux export, the imported Sealed Secrets chart or our Edge Sync setting names."""
    sources = [*edge.plane.get("gitrepositories", "-A")["items"],
               *edge.plane.get("helmrepositories", "-A")["items"]]
    assert sources and all(s["spec"]["url"].startswith(f"{stack.git.url}/")
                           for s in sources), [s["spec"]["url"] for s in sources]
    allowed = set(re.findall(r"image: (\S+)", (stack.root / "flux-install.yaml").read_text()))
    chart = edgetools.component("sealed-secrets").source / "helm" / "sealed-secrets"
    image = yaml.safe_load((chart / "values.yaml").read_text())["image"]
    allowed.add(f"{image['registry']}/{image['repository']}:{image['tag']}")
    allowed.add(Settings.edge_sync_image)
    pods = edge.plane.get("pods", "-A")["items"]
    images = {c["image"] for p in pods for c in p["spec"]["containers"]}
    assert images and images <= allowed, images - allowed


def test_the_script_installs_flux_and_flux_applies_the_repo_with_its_credentials(
        edge: Edge, edge_stack: Stack, fplus: Fplus, tmp_path: Path) -> None:
    cluster = fplus.json("cluster", "create", "line-1", "--wait")
    namespace = cluster["spec"]["namespace"]
    assert "Installing Flux" in bootstrap_done(edge, fplus, "line-1", tmp_path / "first.sh")

    head = fplus.json("cluster", "get", "line-1")["repoCommit"]
    repo = wait_ready(edge, "gitrepository/self-link", namespace)
    assert repo["status"]["artifact"]["revision"] == f"main@sha1:{head}"
    applied = wait_ready(edge, "kustomization/self-link", namespace)
    assert applied["status"]["lastAppliedRevision"] == f"main@sha1:{head}"
    # the repo's own objects are on the edge, applied by kustomize-controller
    assert edge.plane.get("-n", namespace, "deployment/edge-sync") is not None
    assert edge.plane.get("-n", namespace, "gitrepository/helm-charts") is not None

    _only_our_stack(edge, edge_stack)

    before = _installed(edge, namespace)
    assert "Flux is already installed" in bootstrap_done(edge, fplus, "line-1",
                                                          tmp_path / "again.sh")
    assert _installed(edge, namespace) == before
