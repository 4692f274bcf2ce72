"""`flux install --export` output for the central Flux repo: parsed, checked to be a Flux
install, and its version read (pure functions, no Git).

A file over :data:`MAX_BYTES`, not YAML, holding no Flux controllers or CRDs, or naming no
single version is refused with :class:`FluxExportError` before anything is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from fplus.templating import untrusted_yaml

VERSION_LABEL = "app.kubernetes.io/version"
VERSION = re.compile(r"^v\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")
NEEDED_CRDS = ("gitrepositories.source.toolkit.fluxcd.io",
               "kustomizations.kustomize.toolkit.fluxcd.io",
               "helmreleases.helm.toolkit.fluxcd.io")
NEEDED_DEPLOYMENTS = ("source-controller", "kustomize-controller", "helm-controller")
MAX_BYTES = 8 * 1024 * 1024
"""The most an export may be (Flux's own are about 1 MiB; every edge pulls it)."""
FILE_NAME = "gotk-components.yaml"
"""The export's name in ``<version>/`` of the central repo (as ``flux bootstrap`` names it)."""


class FluxExportError(ValueError):
    """Not a Flux install export; the message says why."""


@dataclass(frozen=True)
class FluxExport:
    """An export's Flux version and text."""

    version: str
    text: str

    def repo_files(self) -> dict[str, str]:
        """The export as it goes into the central Flux repo."""
        return {f"{self.version}/{FILE_NAME}": self.text}


def read_flux_export(text: str, where: str = "the file") -> FluxExport:
    """The export in ``text``, checked."""
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise FluxExportError(f"{where} exceeds {MAX_BYTES} bytes "
                              "(cluster_manager.formats.flux_export.MAX_BYTES)")
    try:
        docs = untrusted_yaml.load_all(text)
    except untrusted_yaml.YAMLRefused as exc:
        raise FluxExportError(f"{where} refused: {exc}") from None
    except yaml.YAMLError as exc:
        raise FluxExportError(f"{where} is not YAML: {str(exc).splitlines()[0]}") from None
    if not all(isinstance(doc, dict) for doc in docs):
        raise FluxExportError(f"{where} holds something that is not a Kubernetes object")
    names = {(doc.get("kind"), _meta(doc).get("name")) for doc in docs}
    missing = [f"CustomResourceDefinition {crd}" for crd in NEEDED_CRDS
               if ("CustomResourceDefinition", crd) not in names]
    missing += [f"Deployment {name}" for name in NEEDED_DEPLOYMENTS
                if ("Deployment", name) not in names]
    if missing:
        raise FluxExportError(f"{where} is not a `flux install --export`: no "
                              f"{', '.join(missing)}")
    versions = {_meta(doc).get("labels", {}).get(VERSION_LABEL) for doc in docs
                if doc.get("kind") == "Deployment"}
    if len(versions) != 1 or not isinstance(version := versions.pop(), str) or \
            not VERSION.match(version := f"v{version}" if version[:1].isdigit() else version):
        raise FluxExportError(f"{where}: its controllers must carry one Flux version in the "
                              f"{VERSION_LABEL} label")
    return FluxExport(version, text)  # stored in the v form (2.7.5: v2.7.5), as clusters name it


def _meta(doc: dict[str, Any]) -> dict[str, Any]:
    meta = doc.get("metadata")
    return meta if isinstance(meta, dict) else {}
