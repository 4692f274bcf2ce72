"""The recording kubectl itself: strict enough that a wrong script fails the run tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.bootstrap.edge import FAKE_KUBECTL, FakeEdge, shellcheck

SELF_LINK = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: self-link, namespace: edge}
spec: {interval: 3m, url: "http://git/x"}
"""


def kubectl(edge: FakeEdge, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(edge.bin / "kubectl"), *args], env=edge.env(), cwd=edge.root,
                          capture_output=True, text=True, timeout=30, check=False)


def test_is_clean_posix_sh(tmp_path: Path) -> None:
    assert shellcheck(FAKE_KUBECTL.read_text(encoding="utf-8"), tmp_path) == ""


@pytest.mark.parametrize("args", [
    [], ["version"], ["get", "pods"], ["get", "nodes", "-o", "yaml"],
    ["delete", "namespace", "x"], ["apply", "-f", "x.yaml", "--prune"],
    ["apply", "-k", "."], ["get", "namespace", "default", "--server-side"],
    ["wait", "--for=condition=Ready", "kustomization/self-link"],  # no --timeout
    ["get", "namespace", "default", "-o", "jsonpath={.metadata.name}"],
    ["create", "secret", "generic", "x"],
])
def test_refuses_what_the_script_never_asks(edge: FakeEdge, args: list[str]) -> None:
    done = kubectl(edge, *args)
    assert done.returncode == 99, done
    assert "fake kubectl: unsupported" in done.stderr


def test_waits_only_for_the_right_condition(edge: FakeEdge) -> None:
    edge.install_flux({"kustomizations.kustomize.toolkit.fluxcd.io": ["v1"]})
    args = ["--timeout=1s", "crd/kustomizations.kustomize.toolkit.fluxcd.io"]
    assert kubectl(edge, "wait", "--for=condition=Established", *args).returncode == 0
    assert kubectl(edge, "wait", "--for=condition=Ready", *args).returncode == 99


def test_objects_need_their_namespace_and_crd(edge: FakeEdge) -> None:
    (edge.root / "repo.yaml").write_text(SELF_LINK, encoding="utf-8")
    done = kubectl(edge, "apply", "-f", "repo.yaml")
    assert done.returncode == 1
    assert 'no matches for kind "GitRepository" in version "source.toolkit.fluxcd.io/v1"' \
        in done.stderr
    edge.install_flux({"gitrepositories.source.toolkit.fluxcd.io": ["v1beta2", "v1"]})
    done = kubectl(edge, "apply", "-f", "repo.yaml")
    assert (done.returncode, done.stderr) == (1, 'Error from server (NotFound): namespaces '
                                                 '"edge" not found\n')
    assert kubectl(edge, "create", "namespace", "edge").returncode == 0
    assert kubectl(edge, "create", "namespace", "edge").returncode == 1  # AlreadyExists
    assert kubectl(edge, "apply", "-f", "repo.yaml").stdout == "gitrepository/self-link created\n"
    assert kubectl(edge, "apply", "-f", "repo.yaml").stdout == \
        "gitrepository/self-link configured\n"
    assert edge.has("GitRepository", "edge", "self-link")


def test_logs_every_call(edge: FakeEdge) -> None:
    (edge.root / "repo.yaml").write_text(SELF_LINK, encoding="utf-8")
    kubectl(edge, "-n", "edge", "get", "secret", "missing")
    kubectl(edge, "apply", "-f", "repo.yaml")
    assert edge.calls() == [
        {"cwd": str(edge.root), "argv": ["-n", "edge", "get", "secret", "missing"], "files": {}},
        {"cwd": str(edge.root), "argv": ["apply", "-f", "repo.yaml"],
         "files": {"repo.yaml": SELF_LINK}}]


def test_unreachable_but_config_still_answers(edge: FakeEdge) -> None:
    edge.unreachable()
    assert kubectl(edge, "config", "current-context").stdout == "edge-admin@line\n"
    done = kubectl(edge, "get", "nodes")
    assert done.returncode == 1
    assert "connection to the server" in done.stderr
