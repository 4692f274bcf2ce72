"""Which of the Flux template's files each kind of cluster gets, and that every
combination's tree still validates (CRDs, kubernetes-validate strict, kubectl kustomize).

A bare cluster runs Flux (and usually Sealed Secrets) itself: it gets the self-link and the
template's ``x-fplus.bareFiles``. ``sealedSecrets: false`` (on the cluster, or as the
template's default) leaves out the template's ``x-fplus.sealedSecretsFiles``; the
controller's file carries Edge Sync's access to the certificate too, so nothing refers to a
namespace that is not created.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fplus import manifests
from fplus.cluster_manager.changes.rendering import CENTRAL_CHARTS, bundle_files, helm_release
from fplus.cluster_manager.reconcile.seeding import EDGE_CLUSTER_CHART
from fplus.config_store import uuids
from tests.manifests.crds import CustomResource
from tests.manifests.samples import CONTEXTS, objects, render_flux, write_repo
from tests.toolchain import tool

kubernetes_validate = pytest.importorskip("kubernetes_validate")

ALL = ["self-link.yaml", "helm-charts.yaml", "edge-cluster.yaml", "edge-sync.yaml",
       "sealed-secrets.yaml", "sealed-secrets-upstream.yaml"]
NO_SEALED = ALL[:-2]
AIR_GAPPED = ALL[:-1]
DEFAULT_TEMPLATE_CASES = {  # name: (cluster config, air-gapped, files)
    "plain": ({}, False, ALL),
    "bare": ({"bare": True}, False, ["self-link.yaml"]),
    "bare: false": ({"bare": False}, False, ALL),
    "without Sealed Secrets": ({"sealedSecrets": False}, False, NO_SEALED),
    "with Sealed Secrets": ({"sealedSecrets": True}, False, ALL),
    "bare without Sealed Secrets": ({"bare": True, "sealedSecrets": False}, False,
                                    ["self-link.yaml"]),
    "air-gapped": ({}, True, AIR_GAPPED),
    "air-gapped without Sealed Secrets": ({"sealedSecrets": False}, True, NO_SEALED),
    "Flux from the centre": ({"fluxVersion": "v2.7.5"}, False,
                             [*ALL[:3], "flux-system.yaml", *ALL[3:]]),
    "bare, Flux named": ({"bare": True, "fluxVersion": "v2.7.5"}, False, ["self-link.yaml"]),
}


@pytest.mark.parametrize(("config", "air_gapped", "files"), DEFAULT_TEMPLATE_CASES.values(),
                         ids=DEFAULT_TEMPLATE_CASES)
def test_files_of_the_default_template(config: dict[str, Any], air_gapped: bool,
                                       files: list[str]) -> None:
    assert bundle_files(manifests.load("flux-template"), config, air_gapped) == files


def _template(**options: Any) -> dict[str, Any]:
    files = {name: [] for name in ("self-link.yaml", "edge-sync.yaml", "sealed-secrets.yaml",
                                    "extra.yaml")}
    return {"x-fplus": options, **files} if options else files


OPTION_CASES = {
    # an ACS-shaped template (no options): bare keeps the self-link only, and the
    # controller's file goes by its default name
    "ACS shape, bare": (_template(), {"bare": True}, ["self-link.yaml"]),
    "ACS shape, no Sealed Secrets": (_template(), {"sealedSecrets": False},
                                     ["self-link.yaml", "edge-sync.yaml", "extra.yaml"]),
    "bare files added": (_template(bareFiles=["edge-sync.yaml"]), {"bare": True},
                         ["self-link.yaml", "edge-sync.yaml"]),
    "template default off": (_template(sealedSecrets=False), {},
                             ["self-link.yaml", "edge-sync.yaml", "extra.yaml"]),
    "cluster turns it on": (_template(sealedSecrets=False), {"sealedSecrets": True},
                            ["self-link.yaml", "edge-sync.yaml", "sealed-secrets.yaml",
                             "extra.yaml"]),
    "other controller files": (_template(sealedSecretsFiles=["extra.yaml"]),
                               {"sealedSecrets": False},
                               ["self-link.yaml", "edge-sync.yaml", "sealed-secrets.yaml"]),
    "off beats a bare file": (_template(bareFiles=["sealed-secrets.yaml"]),
                              {"bare": True, "sealedSecrets": False}, ["self-link.yaml"]),
    "Flux files need a version": (_template(fluxFiles=["extra.yaml"]), {},
                                  ["self-link.yaml", "edge-sync.yaml", "sealed-secrets.yaml"]),
    "the template names one": (_template(fluxFiles=["extra.yaml"], fluxVersion="v2.7.5"), {},
                               ["self-link.yaml", "edge-sync.yaml", "sealed-secrets.yaml",
                                "extra.yaml"]),
    "the cluster names one": (_template(fluxFiles=["extra.yaml"]), {"fluxVersion": "v2.8.0"},
                              ["self-link.yaml", "edge-sync.yaml", "sealed-secrets.yaml",
                               "extra.yaml"]),
}


@pytest.mark.parametrize(("template", "config", "files"), OPTION_CASES.values(),
                         ids=OPTION_CASES)
def test_template_options(template: dict[str, Any], config: dict[str, Any],
                          files: list[str]) -> None:
    assert bundle_files(template, config) == files


VARIANTS = {name: (config, air_gapped)
            for name, (config, air_gapped, _) in DEFAULT_TEMPLATE_CASES.items()}
VARIANTS["with a chart"] = ({"chart": uuids.Shared.EdgeClusterChart, "values": {"x": 1}}, False)
VARIANTS["bare with a chart"] = ({"bare": True, "chart": uuids.Shared.EdgeClusterChart}, False)
VARIANTS["air-gapped with a chart"] = ({"chart": uuids.Shared.EdgeClusterChart}, True)


def _context(name: str, variant: dict[str, Any], air_gapped: bool) -> dict[str, Any]:
    """The sample context, with the cluster's HelmRelease when it names a chart (as the
    Cluster Manager renders it: the seeded chart entry in the default resource template),
    and Sealed Secrets from the central charts repo when air-gapped."""
    context = CONTEXTS[name]
    if "fluxVersion" in variant:
        context = {**context, "flux_system": {"version": variant["fluxVersion"]}}
    if air_gapped:
        context = {**context, "sealed_secrets": {**context["sealed_secrets"],
                                                 "source": CENTRAL_CHARTS}}
    if "chart" not in variant:
        return context
    config = {"name": context["name"], "namespace": context["namespace"], **variant}
    release = helm_release(context["uuid"], config, EDGE_CLUSTER_CHART,
                           manifests.load("k8s-resource-templates")["HelmRelease"])
    return {**context, "helm": release}


@pytest.fixture(params=sorted(VARIANTS))
def variant(request: pytest.FixtureRequest) -> tuple[dict[str, Any], bool]:
    return VARIANTS[request.param]


@pytest.mark.parametrize("context_name", ["defaults", "shared-namespace"])
def test_every_variant_validates(variant: tuple[dict[str, Any], bool], context_name: str,
                                 crds: dict[tuple[str, str], CustomResource],
                                 tmp_path: Path) -> None:
    config, air_gapped = variant
    rendered = render_flux(_context(context_name, config, air_gapped), config, air_gapped)
    docs = [doc for _, doc in objects(rendered)]
    assert ("edge-cluster.yaml" in rendered) == ("chart" in config and not config.get("bare"))
    if "flux-system.yaml" in rendered:  # the version's directory of the central repo
        [flux] = [d for d in rendered["flux-system.yaml"] if d["kind"] == "Kustomization"]
        assert flux["spec"]["path"] == f"./{config['fluxVersion']}"
        assert flux["spec"]["prune"] is False
    if air_gapped:  # nothing the edge fetches is on the internet
        assert not [d for d in docs if d["kind"] == "HelmRepository"]
    # every HelmRelease's chart source is in the same tree
    present = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs}
    for doc in docs:
        if doc["kind"] == "HelmRelease":
            source = doc["spec"]["chart"]["spec"]["sourceRef"]
            assert (source["kind"], doc["metadata"]["namespace"], source["name"]) in present
    for doc in docs:
        crd = crds.get((doc["apiVersion"], doc["kind"]))
        if crd is not None:
            assert crd.errors(doc) == [], doc["kind"]
        else:
            kubernetes_validate.validate(doc, kubernetes_validate.latest_version(),
                                         strict=True)
    namespaces = {doc["metadata"].get("namespace") for doc in docs} - {None}
    created = {doc["metadata"]["name"] for doc in docs if doc["kind"] == "Namespace"}
    context = CONTEXTS[context_name]
    # everything lives in the cluster's namespace (made by the bootstrap script) or in one
    # this tree creates
    assert namespaces <= {context["namespace"]} | created
    kubectl = tool("kubectl")
    write_repo(tmp_path / "repo", rendered)
    built = subprocess.run([kubectl, "kustomize", str(tmp_path / "repo")], capture_output=True,
                           text=True, timeout=120, check=False,
                           env={**os.environ, "HOME": str(tmp_path),
                                "KUBECONFIG": str(tmp_path / "none")})
    assert built.returncode == 0, built.stderr
    assert len([d for d in yaml.safe_load_all(built.stdout) if d]) == len(docs)
