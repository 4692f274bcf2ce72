"""Flux upgraded from the centre: two releases exported with the real ``flux install
--export``, both imported; changing the cluster's ``fluxVersion`` makes the real
kustomize-controller roll Flux's own Deployments to the new release's images.

(The host kubelet then runs the pinned controller builds again under the new Deployments:
what is proven is the roll-out the edge performs, not the newer binaries.)
"""

from __future__ import annotations

from pathlib import Path

import yaml

from fplus.config_store import uuids
from harness.realedge import Edge
from harness.stack import Stack, wait_for
from tests.edge.conftest import (
    FLUX_COMPONENTS,
    Fplus,
    bootstrap,
    flux_export,
    import_central,
    wait_applied,
)


def _images(export: Path) -> dict[str, str]:
    """Deployment name → image of a Flux export."""
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]["image"]
            for d in yaml.safe_load_all(export.read_text()) if d and d["kind"] == "Deployment"}


def _version(export: Path) -> str:
    return next(d["metadata"]["labels"]["app.kubernetes.io/version"]
                for d in yaml.safe_load_all(export.read_text()) if d)


def _running(edge: Edge) -> dict[str, str]:
    return {name: edge.plane.get("-n", "flux-system", f"deployment/{name}")["spec"]
            ["template"]["spec"]["containers"][0]["image"]
            for name in FLUX_COMPONENTS.split(",")}


def test_a_new_flux_version_rolls_the_controllers(edge: Edge, edge_stack: Stack, fplus: Fplus,
                                                  tmp_path: Path) -> None:
    installed = flux_export(tmp_path)  # what the bootstrap script embeds
    newer = flux_export(tmp_path, of="flux-next")
    assert _images(newer) != _images(installed)
    import_central(edge_stack, "import-flux", newer)

    cluster = bootstrap(edge, fplus, "upgraded", tmp_path, "--flux-version",
                        _version(installed))
    assert _running(edge) == _images(installed)

    r = edge_stack.admin.patch(
        f"/v2/app/{uuids.App.EdgeClusterConfiguration}/object/{cluster['uuid']}",
        json={"fluxVersion": _version(newer)},
        headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 204, r.text
    wait_for(lambda: fplus.json("cluster", "get", "upgraded")["repoCommit"]
             != cluster["repoCommit"], timeout=60, what="the commit naming the new version")
    wait_applied(edge, fplus, "upgraded")
    wait_for(lambda: _running(edge) == _images(newer), timeout=240,
             what="kustomize-controller to roll Flux to the new images")
