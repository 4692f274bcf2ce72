"""Chart imports that trusted names.

The probe's imports each answered 201: a chart named ``edge-cluster`` (overwriting the system
chart's folder in the shared charts repo every edge pulls), one named ``flux-system``, an
archive with two ``demo/Chart.yaml`` members (the last one won), and a ``Chart.yaml`` whose
``name`` was not its folder's. Each is now refused with 422 in one line, over the API and
by ``cluster-manager import-chart``, and the charts repo does not move; only the CLI's
``--system-chart`` imports a system chart.
"""

from __future__ import annotations

import io
import tarfile
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.gitcli import bare
from harness.servers import Api
from harness.stack import Stack, wait_for
from tests.cluster_manager.api.test_deployments import make_chart
from tests.cluster_manager.test_central_repos import _import
from tests.conftest import grant, make_user

CHARTS = uuids.Shared.HelmChartsRepo


def _yaml(name: str) -> bytes:
    return f"apiVersion: v2\nname: {name}\nversion: 1.0.0\n".encode()


def _archive(members: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, content in members:
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return out.getvalue()


def _named(name: str) -> bytes:
    return _archive([(f"{name}/Chart.yaml", _yaml(name))])


def _custom_system_chart(stack: Stack) -> bytes:
    """A chart named as a template the administrator put in the System Helm chart class."""
    name = f"plant-core-{uuid.uuid4().hex[:6]}"
    template = make_chart(stack, f"System {name}", name)
    r = stack.admin.put(f"/v2/class/{uuids.Class.SystemHelmChart}/direct/member/{template}")
    assert r.status_code in (200, 201, 204), r.text
    return _named(name)


CASES: dict[str, tuple[Callable[[Stack], bytes], str]] = {
    "the edge-cluster system chart": (lambda _: _named("edge-cluster"), "is a system chart"),
    "another system chart": (_custom_system_chart, "is a system chart"),
    "flux-system": (lambda _: _named("flux-system"), "is reserved"),
    "helm-charts": (lambda _: _named("helm-charts"), "is reserved"),
    "two members of one path": (lambda _: _archive([
        ("demo/Chart.yaml", _yaml("demo")), ("demo/Chart.yaml", _yaml("demo"))]),
        "'demo/Chart.yaml' is in the archive twice"),
    "a name that is not its folder's": (lambda _: _archive([("demo/Chart.yaml", _yaml("other"))]),
                                        "names chart 'other' but its folder is 'demo'"),
}


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack, once its charts repo has a first commit."""
    wait_for(lambda: bare(shared_stack.repos / f"{CHARTS}.git", "rev-parse", "--verify", "-q",
                          "main", check=False), what="the charts repo's first commit")
    return shared_stack


@pytest.fixture(scope="module")
def importer(stack: Stack) -> Api:
    """A principal holding the Imports grant, against the Cluster Manager."""
    uid, session = make_user(stack.admin)
    grant(stack.admin, uid, uuids.EdgePerm.Imports, uuids.NULL)
    return Api(stack.manager.url, session.auth)


def _head(stack: Stack) -> str:
    return bare(stack.repos / f"{CHARTS}.git", "rev-parse", "main").strip()


@pytest.mark.parametrize("case", list(CASES))
def test_the_api_refuses_an_untrustworthy_chart_name(stack: Stack, importer: Api,
                                                     case: str) -> None:
    make, reason = CASES[case]
    body = make(stack)
    head = _head(stack)
    r = importer.post("/v1/chart", data=body, headers={"Content-Type": "application/gzip"})
    assert r.status_code == 422, (r.status_code, r.text)
    error = r.json()["error"]
    assert reason in error and "nothing was imported" in error and "\n" not in error, error
    assert _head(stack) == head


def test_the_cli_imports_a_system_chart_only_when_told_it_is_one(stack: Stack,
                                                                  tmp_path: Path) -> None:
    archive = tmp_path / "edge-cluster.tgz"
    archive.write_bytes(_named("edge-cluster"))
    head = _head(stack)
    done = _import(stack, archive, "--git-repos", str(stack.repos))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "is a system chart" in done.stderr and "--system-chart" in done.stderr
    assert _head(stack) == head

    (tmp_path / "flux-system.tgz").write_bytes(_named("flux-system"))
    done = _import(stack, tmp_path / "flux-system.tgz", "--git-repos", str(stack.repos),
                   "--system-chart")
    assert done.returncode == 1 and "is reserved" in done.stderr, done.stderr
    assert _head(stack) == head
