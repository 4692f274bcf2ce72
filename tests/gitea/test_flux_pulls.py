"""End to end on Gitea: the real edge (``harness.realedge``) runs the bootstrap script of a
cluster whose repo a real Gitea hosts, and the real source-controller pulls the repo and the
shared charts repo from Gitea with the Flux token the script carried; kustomize-controller
applies it. The stack is air-gapped (the pinned Flux export embedded, the Sealed Secrets
chart imported through ``POST /v1/chart`` into Gitea's ``helm-charts``), so the edge reaches
nothing but our services and Gitea."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import edgetools
from harness.gitea import Gitea
from harness.gitea_stack import GiteaStack, start_gitea_stack
from harness.realedge import Edge
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import create_cluster, status, wait_for
from tests.edge.conftest import (  # noqa: F401  (fixtures)
    edge,
    edge_tools,
    flux_export,
    run_bootstrap,
    wait_ready,
)


def chart_archive(directory: Path) -> bytes:
    """``directory`` as ``helm package`` would pack it (``<name>/…`` in a gzip tar)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        archive.add(directory, arcname=directory.name)
    return out.getvalue()


@pytest.fixture(scope="module")
def edge_gitea_stack(edge_tools: None, gitea: Gitea,  # noqa: F811
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[GiteaStack]:
    root = tmp_path_factory.mktemp("gitea-edge-stack")
    export = flux_export(root)
    stack = start_gitea_stack(root, gitea, "--air-gapped", "--flux-install-file", str(export),
                              org="edge-e2e")
    try:
        yield stack
    finally:
        stack.stop()


def test_flux_on_a_real_edge_pulls_its_repo_and_the_charts_from_gitea(
        edge: Edge, edge_gitea_stack: GiteaStack, tmp_path: Path) -> None:  # noqa: F811
    stack, gitea = edge_gitea_stack, edge_gitea_stack.gitea
    manager = Api(stack.manager.url, ("admin", ADMIN_PASSWORD))
    chart = edgetools.component("sealed-secrets").source / "helm" / "sealed-secrets"
    imported = manager.post("/v1/chart", data=chart_archive(chart),
                            headers={"Content-Type": "application/gzip"}, timeout=120)
    assert imported.status_code in (200, 201), imported.text
    cluster = create_cluster(stack.admin, "gitea-edge")
    ready = wait_for(lambda: (s := status(stack.admin, cluster) or {}).get("ready") and s,
                     timeout=120, what="the cluster commissioned on Gitea")
    url = manager.post(f"/v1/cluster/{cluster}/bootstrap-url")
    assert url.status_code == 200, url.text
    script = Api("").get(url.json())
    assert script.status_code == 200, script.text
    (tmp_path / "bootstrap.sh").write_text(script.text)
    done = run_bootstrap(edge, tmp_path / "bootstrap.sh")
    assert done.returncode == 0, done.stdout + done.stderr

    namespace, head = "fplus-edge", ready["commit"]
    repo = wait_ready(edge, "gitrepository/self-link", namespace)
    assert repo["spec"]["url"] == f"{gitea.url}/edge-e2e/gitea-edge.git"
    assert repo["status"]["artifact"]["revision"] == f"main@sha1:{head}"
    applied = wait_ready(edge, "kustomization/self-link", namespace)
    assert applied["status"]["lastAppliedRevision"] == f"main@sha1:{head}"
    charts = wait_ready(edge, "gitrepository/helm-charts", namespace)
    assert charts["spec"]["url"] == f"{gitea.url}/edge-e2e/helm-charts.git"
