"""The real-edge kubelet's host commands: only the Pod's arguments name container paths."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.realedge import kubelet
from harness.realedge.kubelet import HOST_IMAGES, PodRun


def _edge_sync_run(tmp_path: Path) -> PodRun:
    container = {"image": "ghcr.io/x/edge-sync:1",
                 "args": ["--state=/tmp/edge-sync/state.json", "--verbose"]}
    return PodRun("fplus-edge", "edge-sync", container, tmp_path / "pod", {})


def test_the_host_interpreter_is_kept_when_the_checkout_is_under_a_mounted_path(
        tmp_path: Path, monkeypatch) -> None:
    """A checkout under ``/tmp`` and an emptyDir at ``/tmp``: the interpreter stays itself."""
    interpreter = "/tmp/x/main/.venv/bin/python"
    monkeypatch.setattr(sys, "executable", interpreter)
    volume = tmp_path / "pod" / "volumes" / "tmp"
    argv = HOST_IMAGES["edge-sync"](_edge_sync_run(tmp_path)).argv({"/tmp": volume})
    assert argv[:4] == [interpreter, "-m", "fplus.edge_sync.cli", "run"]
    # The Pod's own arguments still name the host directory that holds their volume.
    assert argv[4:] == [f"--state={volume}/edge-sync/state.json", "--verbose"]


def test_a_flux_controllers_storage_path_is_mapped_and_our_overrides_kept(
        tmp_path: Path, monkeypatch) -> None:
    binary = "/tmp/cache/source-controller-v1/bin/source-controller"  # under a mount too
    monkeypatch.setattr(kubelet.edgetools, "binary", lambda name, of=None: Path(binary))
    container = {"image": "ghcr.io/fluxcd/source-controller:v1",
                 "args": ["--storage-path=/data", "--watch-all-namespaces"]}
    run = PodRun("flux-system", "source-controller", container, tmp_path, {})
    argv = HOST_IMAGES["source-controller"](run).argv(
        {"/data": tmp_path / "data", "/tmp": tmp_path / "tmp"})
    assert argv[0] == binary
    assert f"--storage-path={tmp_path / 'data'}" in argv
    assert "--watch-all-namespaces" in argv
    assert f"--metrics-addr=127.0.0.1:{run.ports['metrics']}" in argv
