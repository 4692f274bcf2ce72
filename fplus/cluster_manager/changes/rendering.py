"""Everything that goes into a cluster's repo, rendered: README plus ``edo/cluster/*.yaml``.

Pure functions of the cluster's configuration and the template entries (read by the
caller): the Flux template's files, the self-link for the bootstrap script, and the
cluster's HelmRelease when its configuration names a chart.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass

import json_merge_patch

from fplus.config_store import uuids
from fplus.git.repo import ChangeSet
from fplus.jsontypes import Doc, JsonObject, as_list, as_object, is_object, strings
from fplus.templating import render

from ..formats.manifest_yaml import render_documents
from ..model.apps_and_roles import EDGE_SYNC_SECRET, FLUX_SECRET
from ..model.cluster_config import ClusterConfig
from ..model.settings import SHARED_REPO_NAMES, Settings

CLUSTER_DIR = "edo/cluster"
EDGE_SYNC_CA_FILE = "/etc/fplus/credentials/ca.crt"
"""Where Edge Sync finds the CA: key ``ca.crt`` of its mounted credentials Secret."""
HELM_CHARTS_REPO = uuids.Shared.HelmChartsRepo
FLUX_SYSTEM_REPO = uuids.Shared.FluxSystemRepo
TEMPLATE_APP = uuids.App.FluxTemplate
UPSTREAM = {"kind": "HelmRepository", "name": "sealed-secrets"}
CENTRAL_CHARTS = {"kind": "GitRepository", "name": "helm-charts"}
"""Where the Sealed Secrets chart comes from: its upstream repo, or (air-gapped) the shared
charts repo."""
SELF_LINK = "self-link.yaml"
SEALED_SECRETS_FILE = "sealed-secrets.yaml"
TEMPLATE_OPTIONS = "x-fplus"
"""The Flux template's key for our options (:func:`bundle_files`); never a file."""
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.ya?ml")
README = """\
# Edge cluster repository

This repo is managed by the Edge Deployment Operator (the Cluster Manager). As such some
conventions need to be observed:

* Manifests created by hand go under the `by-hand` directory.
* These must not conflict with the generated manifests.
* Other manifests must not be edited: `edo/cluster/` is regenerated on every change, and
  `edo/secrets/` holds SealedSecrets written by the Cluster Manager.

Generated manifests are named `SERVICE/SUBSYSTEM/*`, where SERVICE will normally be `edo`.
"""


@dataclass(frozen=True)
class RepoContent:
    """The rendered repo files and the self-link manifests for the bootstrap script."""

    files: dict[str, str]
    self_link: str

    def change_set(self, always_commit: bool = False) -> ChangeSet:
        """Replace ``edo/cluster/`` wholesale; leave ``edo/secrets/`` and ``by-hand/`` alone
        (``always_commit``: a new revision even when nothing changed)."""
        return ChangeSet(writes=self.files, replace_dirs=frozenset({CLUSTER_DIR}),
                         always_commit=always_commit)


def context(settings: Settings, uuid: str, config: ClusterConfig,
            helm: Doc | None = None, flux: str | None = None) -> dict[str, object]:
    """The values the Flux template is rendered with (``helm``: the cluster's HelmRelease;
    ``flux``: the Flux version its edge applies from the centre)."""
    edge_sync: dict[str, object] = {"image": settings.edge_sync_image,
                                    "credentials_secret": EDGE_SYNC_SECRET}
    if settings.edge_ca is not None:
        edge_sync["ca_env"] = {"name": "FPLUS_CA_FILE", "value": EDGE_SYNC_CA_FILE}
    url = {"self": settings.repo_url(uuid, config["name"]),
           "helm_charts": settings.repo_url(HELM_CHARTS_REPO,
                                            SHARED_REPO_NAMES[HELM_CHARTS_REPO]),
           "flux_system": settings.repo_url(FLUX_SYSTEM_REPO,
                                            SHARED_REPO_NAMES[FLUX_SYSTEM_REPO]),
           "config_store": settings.edge_store_url}
    if settings.edge_manager_url:  # where Edge Sync opens its tunnel; absent: it opens none
        url["cluster_manager"] = settings.edge_manager_url
    ctx: dict[str, object] = {
        "uuid": uuid,
        "name": config["name"],
        "namespace": config["namespace"],
        "url": url,
        "edge_sync": edge_sync,
        "flux": {"secret": FLUX_SECRET},
        "sealed_secrets": {"namespace": settings.sealed_secrets_namespace,
                           "controller": "sealed-secrets-controller",
                           "chart_version": settings.sealed_secrets_chart_version,
                           "repo_url": "https://bitnami-labs.github.io/sealed-secrets",
                           "source": CENTRAL_CHARTS if settings.air_gapped else UPSTREAM},
        "values": config.get("values", {}),
    }
    if helm is not None:
        ctx["helm"] = helm
    if flux is not None:
        ctx["flux_system"] = {"version": flux}
    return ctx


class TemplateMissing(ValueError):
    """A template entry the configuration needs is absent or unusable (``field``: the
    configuration's field that names it, empty when none does)."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


def template_key(config: object) -> str:
    """The Flux template app entry ``config`` renders with: its pinned ``fluxTemplate``,
    else the default (the app's own uuid)."""
    key = config.get("fluxTemplate") if isinstance(config, dict) else None
    return key if isinstance(key, str) else TEMPLATE_APP


def helm_release(cluster: str, config: ClusterConfig, chart: object,
                 resource_template: object) -> dict[str, object]:
    """The cluster's HelmRelease: the Helm chart template entry ``chart`` rendered into the
    K8s resource template entry for HelmReleases (ACS's ``edge-cluster-<uuid>``)."""
    if not is_object(chart) or "chart" not in chart:
        raise TemplateMissing(f"unknown chart {config.get('chart')}", "chart")
    if not is_object(resource_template) or "template" not in resource_template:
        raise TemplateMissing("no HelmRelease resource template is configured")
    rendered_chart = as_object(render(chart, {"uuid": cluster, "name": config["name"]}))
    values = merged_values(rendered_chart.get("values"), config.get("values"))
    template = render(resource_template, {
        **rendered_chart, "uuid": cluster, "values": values,
        "name": f"edge-cluster-{cluster}", "prefix": "edge-cluster",
        "source": "helm-charts"})["template"]
    template.setdefault("metadata", {})["namespace"] = config["namespace"]
    release: dict[str, object] = template
    return release


def merged_values(chart_values: object, cluster_values: object) -> JsonObject:
    """The chart's values with the cluster's merged in as ACS does: RFC 7386 merge-patch
    (objects merge key by key, ``null`` removes a key, anything else replaces)."""
    base: JsonObject = copy.deepcopy(chart_values) if isinstance(chart_values, dict) else {}
    if not isinstance(cluster_values, dict):
        return base
    merged: JsonObject = json_merge_patch.merge(base, cluster_values)
    return merged


def bundle_files(flux_template: Doc, config: Doc,
                 air_gapped: bool = False) -> list[str]:
    """The template files this cluster gets, in template order: all of them; for a ``bare``
    cluster only ``self-link.yaml`` and the template's ``x-fplus.bareFiles``; without the
    template's ``x-fplus.sealedSecretsFiles`` (default ``sealed-secrets.yaml``) where Sealed
    Secrets is off (the cluster's ``sealedSecrets``, else the template's, else on); without
    ``x-fplus.upstreamFiles`` when ``air_gapped``; without ``x-fplus.fluxFiles`` unless a
    Flux version is named (:func:`flux_version`)."""
    options = as_object(flux_template.get(TEMPLATE_OPTIONS))
    files = [name for name in flux_template if name != TEMPLATE_OPTIONS]
    if config.get("bare"):
        keep = {SELF_LINK, *as_list(options.get("bareFiles", []))}
        files = [name for name in files if name in keep]
    if not config.get("sealedSecrets", options.get("sealedSecrets", True)):
        drop = set(as_list(options.get("sealedSecretsFiles", [SEALED_SECRETS_FILE])))
        files = [name for name in files if name not in drop]
    if air_gapped:
        upstream = set(as_list(options.get("upstreamFiles", [])))
        files = [name for name in files if name not in upstream]
    if flux_version(flux_template, config) is None:
        files = [name for name in files if name not in flux_files(flux_template)]
    return files


def flux_files(flux_template: Doc) -> set[str]:
    """The template's ``x-fplus.fluxFiles``: written only with a Flux version."""
    return set(strings(as_object(flux_template.get(TEMPLATE_OPTIONS)).get("fluxFiles")))


def flux_version(flux_template: Doc, config: Doc) -> str | None:
    """The Flux version the cluster's edge applies from the central Flux repo: the
    cluster's ``fluxVersion``, else the template's ``x-fplus.fluxVersion``, else None."""
    default = as_object(flux_template.get(TEMPLATE_OPTIONS)).get("fluxVersion")
    version = config.get("fluxVersion", default)
    return version if isinstance(version, str) else None


FileRenderer = Callable[[Doc, str, Doc], object]
"""Renders ``{name: template[name]}`` with a context, as :func:`render` would."""


def repo_documents(flux_template: object, ctx: Doc, config: Doc | None = None,
                   air_gapped: bool = False, render_file: FileRenderer | None = None
                   ) -> tuple[dict[str, list[object]], list[object]]:
    """The template files the cluster's ``config`` selects (:func:`bundle_files`), rendered
    (file by file with ``render_file`` when given) to their manifests by repo path (files
    whose manifests all render away left out), and the self-link manifests; not yet YAML (a
    preview dumps only the files that change)."""
    if not is_object(flux_template):
        raise TemplateMissing("no Flux template is configured")
    selected = bundle_files(flux_template, config or {}, air_gapped)
    if render_file is None:
        rendered = render({name: flux_template[name] for name in selected}, ctx)
    else:
        rendered = {}
        for name in selected:
            rendered.update(as_object(render_file(flux_template, name, ctx)))
    if not isinstance(rendered, dict) or SELF_LINK not in rendered:
        raise ValueError(f"the Flux template must be an object with a {SELF_LINK} key")
    docs: dict[str, list[object]] = {}
    for name, found in rendered.items():
        if not FILE_NAME.fullmatch(name):
            raise ValueError(f"Flux template key {name!r} is not a plain .yaml file name")
        if not isinstance(found, list):
            raise ValueError(f"Flux template {name}: expected a list of manifests")
        if found:
            docs[f"{CLUSTER_DIR}/{name}"] = found
    return docs, rendered[SELF_LINK]


def repo_content(flux_template: object, ctx: Doc,
                 config: Doc | None = None, air_gapped: bool = False) -> RepoContent:
    """The repo files of :func:`repo_documents`, as YAML, with the README."""
    docs, self_link = repo_documents(flux_template, ctx, config, air_gapped)
    uuid = ctx.get("uuid")  # in many a manifest, and all else alike from cluster to cluster
    varying = uuid if isinstance(uuid, str) else None
    files = {"README.md": README} | {path: render_documents(found, varying)
                                     for path, found in docs.items()}
    link = files.get(f"{CLUSTER_DIR}/{SELF_LINK}")
    return RepoContent(files, link if link is not None
                       else render_documents(self_link, varying))
