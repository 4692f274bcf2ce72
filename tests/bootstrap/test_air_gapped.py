"""An air-gapped stack: with the Sealed Secrets chart imported and a Flux export embedded,
nothing in an edge's repo or bootstrap script names a host other than ours.

Every URL anywhere in the rendered tree, every container image it names, and every URL in
the script outside the embedded Flux export (the operator's `flux install --export`, whose
images their registry serves) is checked. Before the chart is imported the cluster is
Failed with a message saying what to import, and nothing is committed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
import yaml

from fplus.config_store import uuids
from harness.gitcli import bare
from harness.servers import (
    Api,
    ServiceProcess,
    cluster_manager_process,
    git_server_process,
    run_command,
)
from harness.stack import Stack, create_cluster, status, wait_for
from tests.bootstrap.edge import script_files
from tests.shared_files import FLUX_INSTALL, need

OUR_HOST = "127.0.0.1"
REGISTRY = f"{OUR_HOST}:5000"
URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s\"'<>)]+")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("air-gapped")
    store = ServiceProcess(root / "cs").start()
    git = git_server_process(root / "git", store.url).start()
    try:
        manager = cluster_manager_process(
            root / "cm", store.url, git.url, root / "git" / "repos", "--air-gapped",
            "--flux-install-file", str(need(FLUX_INSTALL)),
            "--edge-sync-image", f"{REGISTRY}/fplus/edge-sync:0.1.0").start()
    except BaseException:
        git.stop()
        store.stop()
        raise
    running = Stack(root, store, git, manager)
    yield running
    running.stop()


def _sealed_secrets_chart(where: Path) -> Path:
    (where / "templates").mkdir(parents=True)
    (where / "Chart.yaml").write_text("apiVersion: v2\nname: sealed-secrets\nversion: 2.17.3\n")
    (where / "values.yaml").write_text(f"image:\n  registry: {REGISTRY}\n")
    return where


def _hosts(text: str) -> set[str]:
    return {urlsplit(url).hostname or url for url in URL.findall(text)}


def _images(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "image" and isinstance(value, str):
                yield value
            yield from _images(value)
    elif isinstance(node, list):
        for value in node:
            yield from _images(value)


def test_nothing_an_edge_is_given_names_another_host(stack: Stack, tmp_path: Path) -> None:
    repos = stack.repos
    cluster = create_cluster(stack.admin, "gapped")
    failed = wait_for(lambda: (status(stack.admin, cluster) or {}).get("phase") == "Failed"
                      and status(stack.admin, cluster), what="Failed")
    assert "import-chart sealed-secrets-<version>.tgz" in failed["error"]
    assert not (repos / f"{cluster}.git").exists() or not bare(
        repos / f"{cluster}.git", "rev-parse", "--verify", "-q", "main", check=False)

    done = run_command("fplus.cluster_manager.cli", "import-chart",
                       str(_sealed_secrets_chart(tmp_path / "sealed-secrets")),
                       "--config-store", stack.store.url, "--data-dir", str(stack.root / "cm"),
                       "--git-repos", str(repos))
    assert done.returncode == 0, done.stderr
    manager = Api(stack.manager.url, stack.admin.auth)
    assert manager.post(f"/v1/cluster/{cluster}/redeploy").status_code == 202
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what="ready")

    tree = {path: bare(repos / f"{cluster}.git", "show", f"main:{path}")
            for path in bare(repos / f"{cluster}.git", "ls-tree", "-r", "--name-only",
                             "main").split()}
    assert "edo/cluster/sealed-secrets.yaml" in tree
    assert "edo/cluster/sealed-secrets-upstream.yaml" not in tree
    assert _hosts("".join(tree.values())) == {OUR_HOST}
    docs = [d for text in tree.values() if text.lstrip().startswith("---")
            for d in yaml.safe_load_all(text) if d]
    images = set(_images(docs))
    assert images and all(image.startswith(f"{REGISTRY}/") for image in images), images

    url = manager.post(f"/v1/cluster/{cluster}/bootstrap-url").json()
    script = requests.get(url, timeout=30).text
    files = script_files(script, tmp_path / "unpacked")
    assert files["flux-system.yaml"] == FLUX_INSTALL.read_text()  # the operator's export
    outside = script
    for name, content in files.items():
        if name == "flux-system.yaml":
            outside = outside.replace(content, "")
    assert "FLUX_URL=''" in outside
    assert _hosts(outside) <= {OUR_HOST}, _hosts(outside)
    assert _hosts("".join(v for k, v in files.items() if k != "flux-system.yaml")) == \
        {OUR_HOST}
    assert uuids.Shared.HelmChartsRepo in tree["edo/cluster/helm-charts.yaml"]
