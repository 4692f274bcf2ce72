"""How ``make edge-tools`` groups and orders its Go builds (no Go is run here)."""

from __future__ import annotations

from harness.edgetools import Component, component, pins
from harness.edgetools.__main__ import needs_kubectl
from harness.edgetools.build import build_groups, ldflags


def test_binaries_named_after_their_package_share_one_build() -> None:
    assert build_groups(component("kubernetes")) == [
        ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"]]
    assert build_groups(component("sealed-secrets")) == [["controller", "kubeseal"]]
    # a module root's binary is named by -o, never by go build's own naming
    odd = Component("x", "example.com/x/v3", "v3.0.0", {"x": ".", "tool": "cmd/other"})
    assert build_groups(odd) == [["x"], ["tool"]]


def test_every_binary_is_built_without_symbols_and_keeps_its_version_stamps() -> None:
    for c in pins():
        assert ldflags(c).startswith("-s -w")
    flux, kubernetes = component("flux"), component("kubernetes")
    assert f"-X main.VERSION={flux.version.lstrip('v')}" in ldflags(flux)
    assert f"version.gitVersion={kubernetes.version}" in ldflags(kubernetes)


def test_only_flux_waits_for_kubectl() -> None:
    waiting = {c.name for c in pins() if needs_kubectl(c)}
    assert waiting == {"flux", "flux-next"}
