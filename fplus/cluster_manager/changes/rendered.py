"""One cluster's repo rendered with a configuration, as the reconciler would render it, or the
refusal it would meet; and the checks of a chart an Edge deployment names.

:class:`Inputs` is read once for a whole change (one Config Store search per app, each Flux
template once), so a change to 1,000 clusters costs a handful of requests; what the central
repos hold is remembered by :class:`~.central_files.CentralFiles`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import jsonschema
from jsonschema.exceptions import SchemaError

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.git.store import RepoStore
from fplus.jsontypes import Doc, JsonObject, as_list, as_object, is_object
from fplus.templating import render

from ..formats.manifest_yaml import render_documents
from ..model.apps_and_roles import CONFIG_APP
from ..model.cluster_config import ALLOWED_KEYS, check_config
from ..model.settings import Settings
from .central_files import CHART_FILE, CHARTS, CentralFiles, chart_refusal, check_central_repos
from .file_renders import FileRenders
from .refusals import Refusal, refusal_of
from .rendering import (
    README,
    TEMPLATE_APP,
    TemplateMissing,
    context,
    helm_release,
    merged_values,
    repo_documents,
    template_key,
)

CHART_FIELDS = ("chart", "values", "source", "prefix")


def read_configs(cs: ConfigStoreClient) -> dict[str, dict[str, object]]:
    """Every cluster's configuration entry (the fields it may hold): one search."""
    found = as_object(cs.search(CONFIG_APP, {}, {k: k for k in sorted(ALLOWED_KEYS)}))
    return {c: {k: v for k, v in e.items() if v is not None}
            for c, e in found.items() if is_object(e)}


@dataclass
class Inputs:
    """What every cluster of one change renders with, read once."""

    cs: ConfigStoreClient
    repos: RepoStore
    settings: Settings
    central: CentralFiles
    templates: dict[str, object] = field(default_factory=dict)
    """Flux template app key -> template (given, or read on first use)."""
    files: FileRenders = field(default_factory=FileRenders)
    """Template files rendered once per distinct input."""
    _charts: dict[str, object] | None = None
    _resource: object = None

    def template(self, key: str) -> object:
        if key not in self.templates:
            self.templates[key] = self.cs.get_config(TEMPLATE_APP, key)
        return self.templates[key]

    def chart(self, chart: str) -> object:
        """The Helm chart template entry ``chart`` (None: there is none)."""
        if self._charts is None:
            self._charts = {c: {k: v for k, v in e.items() if v is not None}
                            for c, e in as_object(self.cs.search(
                                uuids.App.HelmChartTemplate, {},
                                {k: k for k in CHART_FIELDS})).items() if is_object(e)}
        return self._charts.get(chart)

    def resource(self) -> object:
        """The K8s resource template HelmReleases are rendered into."""
        if self._resource is None:
            self._resource = self.cs.get_config(uuids.App.K8sResourceTemplate,
                                                uuids.K8sResource.HelmRelease)
        return self._resource


@dataclass(frozen=True)
class Rendered:
    """A cluster's repo files under a configuration, or why it cannot be rendered: each
    file's manifests (the README its text), made YAML only when asked (:meth:`text`)."""

    files: Mapping[str, object]
    refused: Refusal | None = None

    def text(self, path: str) -> str:
        """The file ``path`` as committed."""
        found = self.files[path]
        return found if isinstance(found, str) else render_documents(as_list(found))


def render_cluster(inputs: Inputs, cluster: str, config: object) -> Rendered:
    """``cluster``'s repo as ``config`` would render it (the reconciler's checks, plus its
    chart's presence in the shared charts repo and its values schema)."""
    try:
        spec = check_config(config)
        helm = None
        if "chart" in spec:
            chart = inputs.chart(spec["chart"])
            helm = helm_release(cluster, spec, chart, inputs.resource())
            rendered_chart = as_object(render(chart, {"uuid": cluster, "name": spec["name"]}))
            check_chart(inputs, rendered_chart,
                        merged_values(rendered_chart.get("values"), spec.get("values")),
                        "chart", own=True)
        template = inputs.template(template_key(spec))
        if template is None and "fluxTemplate" in spec:
            raise TemplateMissing(f"no Flux template {spec['fluxTemplate']} in the Flux "
                                  "template app", "fluxTemplate")
        flux = check_central_repos(inputs.central, inputs.repos, inputs.settings.air_gapped,
                                   template, spec)
        docs, _ = repo_documents(template, context(inputs.settings, cluster, spec, helm, flux),
                                 spec, inputs.settings.air_gapped, inputs.files)
    except ValueError as exc:  # InvalidConfig, TemplateMissing, a template that won't render
        return Rendered({}, refusal_of(exc))
    files: dict[str, object] = {"README.md": README, **docs}
    return Rendered(files)


def check_chart(inputs: Inputs, chart: Doc, values: JsonObject, field: str,
                own: bool = False) -> None:
    """:class:`TemplateMissing` (naming ``field``) unless the chart the Helm chart template
    ``chart`` names is in the shared charts repo (when it comes from there) and ``values``
    pass its ``values.schema.json`` (when it has one); ``own``: the cluster's own chart."""
    name = chart.get("chart")
    if not isinstance(name, str) or chart.get("source", CHARTS) != CHARTS:
        return
    inputs.central.require(inputs.repos, CHARTS, name, CHART_FILE,
                           chart_refusal(name, system=own), field)
    schema = inputs.central.values_schema(inputs.repos, name)
    if schema is None:
        return
    try:
        error = jsonschema.exceptions.best_match(
            jsonschema.validators.validator_for(schema)(schema).iter_errors(values))
    except SchemaError:
        return  # helm says so on the edge; a broken schema is the chart's, not this change's
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(the values)"
        raise TemplateMissing(f"the values of chart {name} are refused by its "
                              f"values.schema.json at {where}: {error.message}", "values")


def deployment_refusal(inputs: Inputs, chart: str, cluster: str, name: str,
                       values: JsonObject) -> Refusal | None:
    """Why an Edge deployment of the Helm chart template ``chart`` with ``values`` on
    ``cluster`` (named ``name``) cannot work, as Edge Sync would render it (None: it can)."""
    template = inputs.chart(chart)
    if not is_object(template):
        return Refusal("chart", f"{chart} is not a Helm chart template")
    try:
        rendered = as_object(render(template, {"uuid": cluster, "name": name}))
        check_chart(inputs, rendered, merged_values(
            merged_values({"cluster": name}, rendered.get("values")), values), "chart")
    except ValueError as exc:
        return refusal_of(exc, "chart")
    return None
