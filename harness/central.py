"""The central repos' imports, as an operator makes them: a ``helm package``-shaped chart
archive (:func:`chart_archive`) posted to ``POST /v1/chart`` (:func:`import_chart`), and a
`flux install --export` (:func:`flux_export`) posted to ``POST /v1/flux-version``
(:func:`import_flux`), so a test's charts and Flux versions exist where the Cluster Manager
checks for them."""

from __future__ import annotations

import io
import tarfile

import yaml

from harness.servers import Api

GZIP = {"Content-Type": "application/gzip"}
YAML = {"Content-Type": "application/yaml"}


def chart_archive(name: str, version: str = "0.1.0",
                  extra: dict[str, bytes] | None = None) -> bytes:
    """A ``helm package``-shaped archive: ``<name>/Chart.yaml`` and a template."""
    files = {"Chart.yaml": f"apiVersion: v2\nname: {name}\nversion: {version}\n".encode(),
             "templates/cm.yaml": b"apiVersion: v1\nkind: ConfigMap\n", **(extra or {})}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for path, data in files.items():
            member = tarfile.TarInfo(f"{name}/{path}")
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return out.getvalue()


def import_chart(manager: Api, name: str, version: str = "0.1.0",
                 extra: dict[str, bytes] | None = None) -> None:
    """Import chart ``name`` into the shared charts repo through the Cluster Manager's API
    (``manager`` holding the Imports permission, or root)."""
    r = manager.post("/v1/chart", data=chart_archive(name, version, extra), headers=GZIP)
    assert r.status_code in (200, 201), r.text


def flux_export(version: str) -> str:
    """A `flux install --export` of ``version`` as the import checks it: the CRDs and the
    controllers' Deployments, labelled with the version."""
    docs: list[dict[str, object]] = [
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "metadata": {"name": crd}}
        for crd in ("gitrepositories.source.toolkit.fluxcd.io",
                    "kustomizations.kustomize.toolkit.fluxcd.io",
                    "helmreleases.helm.toolkit.fluxcd.io")]
    docs += [{"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": name, "namespace": "flux-system",
                           "labels": {"app.kubernetes.io/version": version}}}
             for name in ("source-controller", "kustomize-controller", "helm-controller")]
    return yaml.safe_dump_all(docs)


def import_flux(manager: Api, version: str) -> None:
    """Import Flux ``version`` into the central Flux repo through the Cluster Manager's API
    (``manager`` holding the Imports permission, or root)."""
    r = manager.post("/v1/flux-version", data=flux_export(version), headers=YAML)
    assert r.status_code in (200, 201), r.text
