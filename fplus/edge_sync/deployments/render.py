"""Edge deployment entries → the HelmReleases and GitRepositories wanted (pure functions).

Follows ACS Edge Sync (reference §4.4): for deployment ``D`` with Helm chart template
``T``, ``chart = T({uuid: D, name, hostname})``; the HelmRelease template is rendered with
``{uuid: D, name: k8sname(chart.prefix ?? chart.chart, D), chart: chart.chart,
source: k8sname("helm", chart.source ?? "charts"), values}`` where ``values`` =
``merge(merge({cluster, realm, directory_url}, chart.values), spec.values)``; a chart
``source`` also wants ``GitRepository helm-<source>`` at ``<git>/uuid/<source>``.

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
from typing import Any

from fplus.config_store.uuids import K8sResource, is_uuid
from fplus.kubenames import is_dns1123_subdomain
from fplus.templating import render

UUID_LABEL = "factoryplus.app.amrc.co.uk/uuid"
_NOT_NAME = re.compile(r"[^a-z0-9-]+")


GitUrl = str | None | Callable[[], str | None]
"""The Git server's base URL, or a function asked for it when a chart needs it."""


class RenderError(ValueError):
    """One deployment cannot be turned into manifests."""


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

    def base_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {"cluster": self.name}
        if self.realm is not None:
            values["realm"] = self.realm
        if self.directory_url is not None:
            values["directory_url"] = self.directory_url
        return values


@dataclass(frozen=True)
class Templates:
    """The K8s resource templates: managed types and the two object templates."""

    types: frozenset[ResourceType]
    helm_release: Any
    git_repository: Any


@dataclass
class Plan:
    """What should exist: manifests by type and name, and the deployments that failed."""

    types: frozenset[ResourceType]
    manifests: dict[ResourceType, dict[str, dict[str, Any]]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    """Deployment uuid → why it was skipped."""
    releases: dict[str, list[str]] = field(default_factory=dict)
    """Deployment uuid → names of its HelmReleases."""


def k8sname(*parts: str) -> str:
    """ACS ``k8sname``: join with ``-``, lower-case, runs of other chars → ``-``, trim one."""
    name = _NOT_NAME.sub("-", "-".join(parts).lower())
    name = name.removeprefix("-")
    return name.removesuffix("-")


def merge(p1: Any, p2: Any) -> Any:
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


def load_templates(entries: Mapping[str, Any]) -> Templates:
    """Managed types from every entry's ``resources``; HelmRelease/GitRepository templates."""
    types: set[ResourceType] = set()
    for entry in entries.values():
        if not isinstance(entry, dict):
            continue
        for res in entry.get("resources") or []:
            if (isinstance(res, dict) and isinstance(res.get("apiVersion"), str)
                    and isinstance(res.get("kind"), str)):
                types.add(ResourceType(res["apiVersion"], res["kind"]))

    def template(obj: str) -> Any:
        entry = entries.get(obj)
        return entry.get("template") if isinstance(entry, dict) else None

    return Templates(frozenset(types), template(K8sResource.HelmRelease),
                     template(K8sResource.GitRepository))


def chart_uuids(spec: Mapping[str, Any]) -> list[str]:
    """The deployment's chart template(s): ``chart``, else the deprecated ``charts`` list."""
    if "chart" in spec:
        charts = [spec["chart"]]
    elif "charts" in spec:
        charts = spec["charts"] if isinstance(spec["charts"], list) else [spec["charts"]]
    else:
        raise RenderError("the entry names no chart")
    if not charts or not all(is_uuid(c) for c in charts):
        raise RenderError(f"chart must be a Helm chart template UUID, not {charts!r}")
    return charts


def _check_spec(spec: Any) -> dict[str, Any]:
    if not isinstance(spec, dict):
        raise RenderError("the entry is not a JSON object")
    if not isinstance(spec.get("name"), str) or not spec["name"]:
        raise RenderError("the entry has no name")
    if "hostname" in spec and not isinstance(spec["hostname"], str):
        raise RenderError("hostname must be a string")
    if not isinstance(spec.get("values", {}), dict):
        raise RenderError("values must be an object")
    return spec


def _manifest(template: Any, context: dict[str, Any], what: str,
              types: frozenset[ResourceType]) -> tuple[ResourceType, dict[str, Any]]:
    if template is None:
        raise RenderError(f"no {what} K8s resource template is configured")
    obj = render(template, context)
    if not isinstance(obj, dict):
        raise RenderError(f"the {what} template does not render to an object")
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not is_dns1123_subdomain(name):
        raise RenderError(f"{what} name {name!r} is not a valid Kubernetes name")
    rtype = ResourceType(str(obj.get("apiVersion")), str(obj.get("kind")))
    if rtype not in types:
        raise RenderError(f"{rtype.kind} ({rtype.api_version}) is not a managed resource type")
    return rtype, obj


def render_deployment(uuid: str, spec: Any, charts: Mapping[str, Any], templates: Templates,
                      cluster: ClusterInfo,
                      git_url: GitUrl) -> list[tuple[ResourceType, dict[str, Any]]]:
    """The manifests one deployment wants; :class:`RenderError` if it cannot be rendered."""
    spec = _check_spec(spec)
    context: dict[str, Any] = {"uuid": uuid, "name": spec["name"]}
    if "hostname" in spec:
        context["hostname"] = spec["hostname"]
    out = []
    for chart_uuid in chart_uuids(spec):
        template = charts.get(chart_uuid)
        if not isinstance(template, dict):
            raise RenderError(f"Helm chart template {chart_uuid} does not exist")
        chart = render(template, context)
        if not isinstance(chart.get("chart"), str) or not chart["chart"]:
            raise RenderError(f"Helm chart template {chart_uuid} has no chart name")
        source = chart.get("source")
        if source is not None and not is_uuid(source):
            raise RenderError(f"Helm chart template {chart_uuid}: source must be a UUID")
        values = merge(merge(cluster.base_values(), chart.get("values", {})),
                       spec.get("values", {}))
        out.append(_manifest(templates.helm_release, {
            "uuid": uuid, "name": k8sname(str(chart.get("prefix") or chart["chart"]), uuid),
            "chart": chart["chart"], "source": k8sname("helm", source or "charts"),
            "values": values}, "HelmRelease", templates.types))
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


def plan(deployments: Mapping[str, Any], charts: Mapping[str, Any], templates: Templates,
         cluster: ClusterInfo, git_url: GitUrl) -> Plan:
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
                key = (rtype, obj["metadata"]["name"])
                # GitRepositories are shared by name; anything else must be unique
                if rtype.kind != "GitRepository" and (key in claimed or key in mine):
                    raise RenderError(f"{rtype.kind} {key[1]} is already wanted by "
                                      f"deployment {claimed.get(key, uuid)}")
                mine.add(key)
        except RenderError as exc:
            result.failed[uuid] = str(exc)
            continue
        for rtype, obj in wanted:
            name = obj["metadata"]["name"]
            claimed.setdefault((rtype, name), uuid)
            result.manifests.setdefault(rtype, {})[name] = obj
            if rtype.kind == "HelmRelease":
                result.releases.setdefault(uuid, []).append(name)
    return result
