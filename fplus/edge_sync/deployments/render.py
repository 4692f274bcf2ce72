"""Edge deployment entries → the HelmReleases and GitRepositories wanted (pure functions).

Follows ACS Edge Sync (reference §4.4): for deployment ``D`` with Helm chart template
``T``, ``chart = T({uuid: D, name, hostname})``; the HelmRelease template is rendered with
``{uuid: D, name: k8sname(chart.prefix ?? chart.chart, D), chart: chart.chart,
source: k8sname("helm", chart.source ?? "charts"), values}`` where ``values`` =
``merge(merge({cluster, realm, directory_url}, chart.values), spec.values)``; a chart
``source`` also wants ``GitRepository helm-<source>`` at ``<git>/uuid/<source>``.

Ours besides: an entry's ``driftDetection`` becomes the HelmRelease's
``spec.driftDetection.mode`` (absent: the template's), and its ``dependsOn`` the
HelmRelease's ``spec.dependsOn`` (:mod:`.order`).

Unlike ACS, a deployment that cannot be rendered (malformed entry, missing chart
template, bad output) is reported in :attr:`Plan.failed` instead of silently vanishing,
and the applier keeps its existing objects rather than pruning them.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from fplus.config_store.uuids import K8sResource, is_uuid
from fplus.jsontypes import Doc, as_list, as_object, is_object, text
from fplus.kubenames import is_dns1123_subdomain
from fplus.templating import render

from .entry import RenderError, parse
from .order import add_order

Manifest = dict[str, object]
"""A rendered Kubernetes object (its ``metadata.name`` checked)."""

UUID_LABEL = "factoryplus.app.amrc.co.uk/uuid"
_NOT_NAME = re.compile(r"[^a-z0-9-]+")


GitUrl = str | None | Callable[[], str | None]
"""The Git server's base URL, or a function asked for it when a chart needs it."""


@dataclass(frozen=True, order=True)
class ResourceType:
    """A managed ``apiVersion`` + ``kind``."""

    api_version: str
    kind: str


@dataclass(frozen=True)
class ClusterInfo:
    """Values every deployment's chart receives (``cluster``, ``realm``, ``directory_url``)."""

    name: str
    realm: str | None = None
    directory_url: str | None = None

    def base_values(self) -> dict[str, object]:
        values: dict[str, object] = {"cluster": self.name}
        if self.realm is not None:
            values["realm"] = self.realm
        if self.directory_url is not None:
            values["directory_url"] = self.directory_url
        return values


@dataclass(frozen=True)
class Templates:
    """The K8s resource templates: managed types and the two object templates."""

    types: frozenset[ResourceType]
    helm_release: object
    git_repository: object


@dataclass
class Plan:
    """What should exist: manifests by type and name, and the deployments that failed."""

    types: frozenset[ResourceType]
    manifests: dict[ResourceType, dict[str, Manifest]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    """Deployment uuid → why it was skipped."""
    releases: dict[str, list[str]] = field(default_factory=dict)
    """Deployment uuid → names of its HelmReleases."""


def k8sname(*parts: str) -> str:
    """ACS ``k8sname``: join with ``-``, lower-case, runs of other chars → ``-``, trim one."""
    name = _NOT_NAME.sub("-", "-".join(parts).lower())
    name = name.removeprefix("-")
    return name.removesuffix("-")


def merge(p1: object, p2: object) -> object:
    """json-merge-patch's ``merge`` of two patches (ACS values merge).

    Both objects (or both arrays, index-wise): recurse into common keys, take ``p2``'s
    value otherwise; anything else (a null, a scalar, an array meeting an object): ``p2``.
    Nulls are kept, not deletions.
    """
    if isinstance(p1, dict) and isinstance(p2, dict):
        out = copy.deepcopy(p1)
        for key, value in p2.items():
            out[key] = merge(p1[key], value) if key in p1 else copy.deepcopy(value)
        return out
    if isinstance(p1, list) and isinstance(p2, list):
        out_list = copy.deepcopy(p1)
        for i, value in enumerate(p2):
            if i < len(p1):
                out_list[i] = merge(p1[i], value)
            else:
                out_list.append(copy.deepcopy(value))
        return out_list
    return copy.deepcopy(p2)


def load_templates(entries: Mapping[str, object]) -> Templates:
    """Managed types from every entry's ``resources``; HelmRelease/GitRepository templates."""
    types: set[ResourceType] = set()
    for entry in entries.values():
        for res in as_list(as_object(entry).get("resources")):
            fields = as_object(res)
            api_version, kind = text(fields, "apiVersion"), text(fields, "kind")
            if api_version is not None and kind is not None:
                types.add(ResourceType(api_version, kind))

    def template(obj: str) -> object:
        return as_object(entries.get(obj)).get("template")

    return Templates(frozenset(types), template(K8sResource.HelmRelease),
                     template(K8sResource.GitRepository))


def _manifest(template: object, context: Doc, what: str,
              types: frozenset[ResourceType]) -> tuple[ResourceType, Manifest]:
    if template is None:
        raise RenderError(f"no {what} K8s resource template is configured")
    obj = render(template, context)
    if not is_object(obj):
        raise RenderError(f"the {what} template does not render to an object")
    meta = obj.get("metadata")
    name = meta.get("name") if is_object(meta) else None
    if not is_dns1123_subdomain(name):
        raise RenderError(f"{what} name {name!r} is not a valid Kubernetes name")
    rtype = ResourceType(str(obj.get("apiVersion")), str(obj.get("kind")))
    if rtype not in types:
        raise RenderError(f"{rtype.kind} ({rtype.api_version}) is not a managed resource type")
    return rtype, obj


def name_of(manifest: Manifest) -> str:
    """A rendered manifest's ``metadata.name`` (checked by :func:`_manifest`)."""
    return str(as_object(manifest.get("metadata")).get("name"))


def render_deployment(uuid: str, spec: object, charts: Mapping[str, object],
                      templates: Templates,
                      cluster: ClusterInfo, git_url: GitUrl) -> list[tuple[ResourceType, Manifest]]:
    """The manifests one deployment wants; :class:`RenderError` if it cannot be rendered."""
    deployment = parse(spec)
    context: dict[str, object] = {"uuid": uuid, "name": deployment.name}
    if deployment.hostname is not None:
        context["hostname"] = deployment.hostname
    out = []
    for chart_uuid in deployment.charts:
        template = charts.get(chart_uuid)
        if not is_object(template):
            raise RenderError(f"Helm chart template {chart_uuid} does not exist")
        chart = as_object(render(template, context))
        name = text(chart, "chart")
        if not name:
            raise RenderError(f"Helm chart template {chart_uuid} has no chart name")
        source = chart.get("source")
        if source is not None and not (isinstance(source, str) and is_uuid(source)):
            raise RenderError(f"Helm chart template {chart_uuid}: source must be a UUID")
        values = merge(merge(cluster.base_values(), chart.get("values", {})),
                       deployment.values)
        release = _manifest(templates.helm_release, {
            "uuid": uuid, "name": k8sname(str(chart.get("prefix") or name), uuid),
            "chart": name, "source": k8sname("helm", source or "charts"),
            "values": values}, "HelmRelease", templates.types)
        if deployment.drift is not None:
            spec = as_object(release[1].setdefault("spec", {}))
            spec["driftDetection"] = as_object(spec.get("driftDetection")) | {
                "mode": deployment.drift}
        out.append(release)
        if source is not None:
            if callable(git_url):
                git_url = git_url()
            if not git_url:
                raise RenderError("the chart comes from a Git repository but the Git "
                                  "server's URL is not known (set GIT_URL)")
            out.append(_manifest(templates.git_repository, {
                "uuid": source, "name": k8sname("helm", source),
                "url": f"{git_url.rstrip('/')}/uuid/{source}"}, "GitRepository",
                templates.types))
    return out


def plan(deployments: Mapping[str, object], charts: Mapping[str, object],
         templates: Templates, cluster: ClusterInfo, git_url: GitUrl) -> Plan:
    """Render every deployment; failures are collected, never fatal to the others.

    A callable ``git_url`` is asked at most once, and only if some chart needs it.
    """
    if callable(git_url):
        git_url = functools.cache(git_url)
    result = Plan(templates.types, {t: {} for t in templates.types})
    claimed: dict[tuple[ResourceType, str], str] = {}
    for uuid in sorted(deployments):
        try:
            wanted = render_deployment(uuid, deployments[uuid], charts, templates, cluster,
                                       git_url)
            mine: set[tuple[ResourceType, str]] = set()
            for rtype, obj in wanted:
                key = (rtype, name_of(obj))
                # GitRepositories are shared by name; anything else must be unique
                if rtype.kind != "GitRepository" and (key in claimed or key in mine):
                    raise RenderError(f"{rtype.kind} {key[1]} is already wanted by "
                                      f"deployment {claimed.get(key, uuid)}")
                mine.add(key)
        except RenderError as exc:
            result.failed[uuid] = str(exc)
            continue
        for rtype, obj in wanted:
            name = name_of(obj)
            claimed.setdefault((rtype, name), uuid)
            result.manifests.setdefault(rtype, {})[name] = obj
            if rtype.kind == "HelmRelease":
                result.releases.setdefault(uuid, []).append(name)
    add_order(result.releases, result.failed,
              [m for t, m in result.manifests.items() if t.kind == "HelmRelease"], deployments)
    return result
