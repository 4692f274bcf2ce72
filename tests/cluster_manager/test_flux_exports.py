"""Reading a `flux install --export` to import: its version, and every way a file is refused
before anything is written."""

from __future__ import annotations

import pytest
import yaml

from fplus.cluster_manager.formats.flux_export import MAX_BYTES, FluxExportError, read_flux_export
from harness.central import flux_export
from tests.shared_files import FLUX_INSTALL, need


def _export(version: str = "v2.7.5", drop: str | None = None) -> str:
    docs = yaml.safe_load_all(flux_export(version))
    return yaml.safe_dump_all([d for d in docs if d["metadata"]["name"] != drop])


def test_the_real_export() -> None:
    export = read_flux_export(need(FLUX_INSTALL).read_text())
    assert export.version == "v2.7.5"
    assert export.repo_files() == {"v2.7.5/gotk-components.yaml": FLUX_INSTALL.read_text()}


REFUSED = {
    "not YAML": ("a: [", "not YAML"),
    "not objects": ("- a\n- b\n", "not a Kubernetes object"),
    "no controllers": (_export(drop="helm-controller"), "no Deployment helm-controller"),
    "no CRD": (_export(drop="kustomizations.kustomize.toolkit.fluxcd.io"),
               "no CustomResourceDefinition kustomizations"),
    "no version": (_export(version=""), "one Flux version"),
    "a path for a version": (_export(version="v2.7.5/../../x"), "one Flux version"),
    "two versions": (_export() + "---\n" + yaml.safe_dump(
        {"kind": "Deployment", "metadata": {"name": "extra", "labels": {
            "app.kubernetes.io/version": "v2.6.0"}}}), "one Flux version"),
}


@pytest.mark.parametrize(("text", "problem"), REFUSED.values(), ids=REFUSED)
def test_refused(text: str, problem: str) -> None:
    with pytest.raises(FluxExportError, match=problem):
        read_flux_export(text)


def test_an_export_over_the_size_limit_is_refused_before_it_is_parsed() -> None:
    padded = _export() + "#" * (MAX_BYTES - len(_export()))
    assert read_flux_export(padded).version == "v2.7.5"  # at the limit: taken
    with pytest.raises(FluxExportError, match=f"exceeds {MAX_BYTES} bytes"):
        read_flux_export(padded + "#")
