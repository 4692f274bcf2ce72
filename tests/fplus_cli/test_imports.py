"""The real ``fplus chart import``, ``fplus flux import`` and ``fplus flux list`` (the console
script, in a child process) against a stack of this module's own (a Flux import changes what
every cluster may name): a chart directory packed client-side, committed and given a template
that ``fplus chart list`` shows; a non-chart refused in one line with nothing committed; a
Flux version imported, listed, and a cluster created with it Ready."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.central import chart_archive
from harness.gitcli import bare
from harness.stack import Stack
from tests.cluster_manager.api.test_imports_api import CHARTS, FLUX, with_central_repos
from tests.fplus_cli.test_journey import fplus, login
from tests.shared_files import FLUX_INSTALL, need


@pytest.fixture(scope="module")
def stack(module_stack: Stack) -> Stack:
    return with_central_repos(module_stack)


def head(stack: Stack, repo: str) -> str:
    return bare(stack.repos / f"{repo}.git", "rev-parse", "main").strip()


def test_chart_import_of_a_directory_and_of_an_archive(stack: Stack, home: dict[str, str],
                                                       tmp_path: Path) -> None:
    login(stack, home)
    chart = tmp_path / "checkout"
    (chart / "templates").mkdir(parents=True)
    (chart / ".git").mkdir()
    (chart / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a checkout's: left out
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: uns-bridge\nversion: 0.3.0\n")
    (chart / "templates" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n")
    done = fplus(home, "chart", "import", str(chart), "--template", "UNS bridge")
    assert f"imported chart uns-bridge 0.3.0 (2 files) at {head(stack, CHARTS)}" in done.stdout
    template = done.stdout.split("chart template UNS bridge ")[1].strip()
    assert bare(stack.repos / f"{CHARTS}.git", "ls-tree", "-r", "--name-only", "main",
                "uns-bridge").split() == ["uns-bridge/Chart.yaml", "uns-bridge/templates/cm.yaml"]
    charts = {c["uuid"]: c for c in json.loads(fplus(home, "chart", "list", "-o",
                                                     "json").stdout)}
    assert charts[template]["name"] == "UNS bridge" and charts[template]["chart"] == "uns-bridge"
    imported = json.loads(fplus(home, "chart", "list", "--imported", "-o", "json").stdout)
    assert {"name": "uns-bridge", "version": "0.3.0"} in imported
    assert "uns-bridge" in fplus(home, "chart", "list", "--imported", "-q").stdout.split()
    assert "VERSION" in fplus(home, "chart", "list", "--imported").stdout

    archive = tmp_path / "uns-bridge-0.3.0.tgz"
    archive.write_bytes(chart_archive("uns-bridge", "0.3.0"))
    again = fplus(home, "chart", "import", str(archive))
    assert again.stdout.strip() == "chart uns-bridge 0.3.0 is already imported as it is"

    before = head(stack, CHARTS)
    (tmp_path / "not-a-chart").mkdir()
    (tmp_path / "not-a-chart" / "values.yaml").write_text("a: 1\n")
    refused = fplus(home, "chart", "import", str(tmp_path / "not-a-chart"), expect=1)
    assert refused.stderr.startswith("fplus: the chart archive: no Chart.yaml")
    assert "nothing was imported" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert head(stack, CHARTS) == before


def test_flux_import_list_and_a_cluster_with_that_version(stack: Stack,
                                                          home: dict[str, str]) -> None:
    export = need(FLUX_INSTALL)
    login(stack, home)
    assert json.loads(fplus(home, "flux", "list", "-o", "json").stdout) == []
    done = fplus(home, "flux", "import", str(export))
    assert done.stdout.strip() == f"imported Flux v2.7.5 at {head(stack, FLUX)}"
    assert json.loads(fplus(home, "flux", "list", "-o", "json").stdout) == ["v2.7.5"]
    table = fplus(home, "flux", "list").stdout
    assert "VERSION" in table and "v2.7.5" in table
    again = fplus(home, "flux", "import", str(export))
    assert again.stdout.strip() == "Flux v2.7.5 is already imported as it is"

    created = json.loads(fplus(home, "cluster", "create", "cli-flux", "--flux-version",
                               "v2.7.5", "--wait", "-o", "json").stdout)
    assert created["phase"] == "Ready", created
    flux_file = bare(stack.repos / f"{created['uuid']}.git", "show",
                     "main:edo/cluster/flux-system.yaml")
    assert "path: ./v2.7.5" in flux_file
