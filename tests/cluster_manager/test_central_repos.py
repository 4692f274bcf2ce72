"""The central repos (Helm charts, Flux): seeded, given a ``main`` branch by the leader,
pullable by every edge's Flux account (through one grant to the Flux accounts' group) and by
nobody else — not an edge's Edge Sync account, not an ordinary user; filled by
``import-chart`` and ``import-flux``, and what a cluster's repo refers to must be there."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.gitcli import bare
from harness.servers import run_command
from harness.stack import Stack, clone_url, create_cluster, git, status, wait_for
from tests.conftest import make_user
from tests.shared_files import FLUX_INSTALL, need

CHARTS = uuids.Shared.HelmChartsRepo
FLUX = uuids.Shared.FluxSystemRepo


@pytest.fixture
def stack(module_stack: Stack) -> Stack:
    return module_stack


def _account(stack: Stack, cluster: str, role: str, password: str) -> str:
    """The cluster's ``role`` principal's name, after giving it ``password``."""
    principal = status(stack.admin, cluster)[role]["uuid"]
    r = stack.admin.put(f"/v2/principal/{principal}/password", json=password)
    assert r.status_code == 204, r.text
    return stack.admin.get(f"/v2/principal/{principal}/login").json()


def test_every_edge_flux_account_pulls_the_charts_repo_and_nobody_else(
        stack: Stack, tmp_path: Path) -> None:
    clusters = [create_cluster(stack.admin, name) for name in ("charts-a", "charts-b")]
    for cluster in clusters:
        wait_for(lambda c=cluster: (status(stack.admin, c) or {}).get("ready"), what="ready")
    assert stack.admin.get(f"/v2/app/{uuids.App.GitRepoConfig}/object/{CHARTS}").json() == \
        {"path": "shared/helm-charts"}
    for i, cluster in enumerate(clusters):
        flux = _account(stack, cluster, "flux", f"flux-pw-{i}")
        done = git("clone", "-q", clone_url(stack, flux, f"flux-pw-{i}", CHARTS),
                   str(tmp_path / f"charts-{i}"))
        assert done.returncode == 0, done.stderr
        assert "helm-charts" in (tmp_path / f"charts-{i}" / "README.md").read_text()
        # its Flux account still reads its own repo, and not the other cluster's
        other = clusters[1 - i]
        refused = git("ls-remote", clone_url(stack, flux, f"flux-pw-{i}", other))
        assert refused.returncode != 0

    sync = _account(stack, clusters[0], "sync", "sync-pw")
    assert git("ls-remote", clone_url(stack, sync, "sync-pw", CHARTS)).returncode != 0
    make_user(stack.admin, "charts-reader", "charts-reader-pw")
    assert git("ls-remote", clone_url(stack, "charts-reader", "charts-reader-pw",
                                      CHARTS)).returncode != 0
    # nor may a Flux account push to it
    flux = _account(stack, clusters[0], "flux", "flux-pw-push")
    work = tmp_path / "charts-push"
    assert git("clone", "-q", clone_url(stack, flux, "flux-pw-push", CHARTS),
               str(work)).returncode == 0
    (work / "evil.txt").write_text("x")
    git("-c", "user.name=x", "-c", "user.email=x@x", "add", ".", cwd=work)
    git("-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "x", cwd=work)
    assert git("push", "-q", "origin", "HEAD:main", cwd=work).returncode != 0


def test_the_default_chart_entry_is_seeded(stack: Stack) -> None:
    entry = stack.admin.get(f"/v2/app/{uuids.App.HelmChartTemplate}/object/"
                            f"{uuids.Shared.EdgeClusterChart}").json()
    assert entry == {"chart": "edge-cluster",
                     "values": {"cluster": {"name": "{{name}}", "uuid": "{{uuid}}"}}}


def _import(stack: Stack, source: Path, *where: str,
            command: str = "import-chart") -> subprocess.CompletedProcess[str]:
    return run_command("fplus.cluster_manager.cli", command, str(source), "--config-store",
                       stack.store.url, "--data-dir", str(stack.root / "cm"), *where)


def _charts_head(stack: Stack) -> str:
    return bare(stack.repos / f"{CHARTS}.git", "rev-parse", "main").strip()


def test_import_chart_commits_it_for_every_edge_and_refuses_a_non_chart(
        stack: Stack, tmp_path: Path) -> None:
    wait_for(lambda: (stack.repos / f"{CHARTS}.git").is_dir(), what="the charts repo")
    wait_for(lambda: bare(stack.repos / f"{CHARTS}.git", "rev-parse", "--verify", "-q", "main",
                          check=False), what="its first commit")
    chart = tmp_path / "edge-cluster"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: edge-cluster\nversion: 0.1.0\n")
    (chart / "templates" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n")
    # straight into the Git server's repos, then through its HTTP as the Cluster Manager
    done = _import(stack, chart, "--git-repos", str(stack.repos), "--system-chart")
    assert done.returncode == 0, done.stderr
    assert "imported chart edge-cluster 0.1.0 (2 files)" in done.stdout
    again = _import(stack, chart, "--git", stack.git.url, "--system-chart")
    assert again.returncode == 0, again.stderr
    assert "chart edge-cluster 0.1.0 is already imported" in again.stdout

    head = _charts_head(stack)
    (tmp_path / "not-a-chart").mkdir()
    (tmp_path / "not-a-chart" / "values.yaml").write_text("a: 1\n")
    refused = _import(stack, tmp_path / "not-a-chart", "--git", stack.git.url)
    assert refused.returncode == 1 and "no Chart.yaml" in refused.stderr
    assert "nothing was imported" in refused.stderr and "Traceback" not in refused.stderr
    assert _charts_head(stack) == head

    # an edge's Flux account sees it where its HelmRelease looks: <chart>/Chart.yaml
    cluster = create_cluster(stack.admin, "charts-c")
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what="ready")
    flux = _account(stack, cluster, "flux", "flux-pw-c")
    work = tmp_path / "clone"
    assert git("clone", "-q", clone_url(stack, flux, "flux-pw-c", CHARTS),
               str(work)).returncode == 0
    assert (work / "edge-cluster" / "Chart.yaml").read_text().endswith("version: 0.1.0\n")
    assert (work / "README.md").is_file()


def test_import_flux_and_clusters_that_apply_it_from_the_centre(stack: Stack,
                                                                tmp_path: Path) -> None:
    flux_repo = stack.repos / f"{FLUX}.git"
    wait_for(lambda: bare(flux_repo, "rev-parse", "--verify", "-q", "main", check=False),
             what="the Flux repo's first commit")
    (tmp_path / "not-flux.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n")
    refused = _import(stack, tmp_path / "not-flux.yaml", "--git", stack.git.url,
                      command="import-flux")
    assert refused.returncode == 1 and "is not a `flux install --export`" in refused.stderr
    assert "nothing was imported" in refused.stderr

    early = create_cluster(stack.admin, "flux-early", fluxVersion="v2.7.5")
    failed = wait_for(lambda: (status(stack.admin, early) or {}).get("phase") == "Failed"
                      and status(stack.admin, early), what="Failed before the import")
    assert "cluster-manager import-flux" in failed["error"]

    done = _import(stack, need(FLUX_INSTALL), "--git", stack.git.url, command="import-flux")
    assert done.returncode == 0 and "imported Flux v2.7.5" in done.stdout, done.stderr
    # the import itself asks the clusters that waited for it to try again
    assert "1 cluster(s) that waited for an import will try again" in done.stdout
    wait_for(lambda: (status(stack.admin, early) or {}).get("ready"), what="ready once imported")
    again = _import(stack, FLUX_INSTALL, "--git", stack.git.url, command="import-flux")
    assert again.stdout.strip() == "Flux v2.7.5 is already imported as it is"  # none waits
    flux_file = bare(stack.repos / f"{early}.git", "show", "main:edo/cluster/flux-system.yaml")
    assert "path: ./v2.7.5" in flux_file and f"/uuid/{FLUX}" in flux_file

    never = create_cluster(stack.admin, "flux-never", fluxVersion="v9.9.9")
    failed = wait_for(lambda: (status(stack.admin, never) or {}).get("phase") == "Failed"
                      and status(stack.admin, never), what="Failed")
    assert "Flux v9.9.9 is not in the central Flux repo" in failed["error"]

    account = _account(stack, early, "flux", "flux-pw-f")
    work = tmp_path / "flux-clone"
    assert git("clone", "-q", clone_url(stack, account, "flux-pw-f", FLUX),
               str(work)).returncode == 0
    assert (work / "v2.7.5" / "gotk-components.yaml").read_text() == FLUX_INSTALL.read_text()
