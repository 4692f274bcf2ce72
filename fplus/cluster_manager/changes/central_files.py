"""Whether the central repos hold what a cluster's repo or an Edge deployment is about to refer
to (a chart, a Flux version, a chart's ``values.schema.json``), so a change is refused, or a
cluster is Failed, with what to import instead of committing what its edge cannot apply.

One check for both wings: :func:`check_central_repos` is what the reconciler's render and the
API's refusals (:mod:`.rendered`) call. Positive answers and schemas are remembered for
:data:`REMEMBER` seconds, so a render does not read the repo each time (imports only add; a
removal shows within that time)."""

from __future__ import annotations

import json

from fplus.config_store import uuids
from fplus.config_store.client import TTLCache
from fplus.git.store import RepoStore
from fplus.jsontypes import Doc, JsonObject

from ..model.apps_and_roles import AFTER_IMPORT
from .rendering import SEALED_SECRETS_FILE, TemplateMissing, bundle_files, flux_files, flux_version

CHARTS = uuids.Shared.HelmChartsRepo
FLUX = uuids.Shared.FluxSystemRepo
FLUX_FILE = "gotk-components.yaml"
CHART_FILE = "Chart.yaml"
SCHEMA_FILE = "values.schema.json"
REMEMBER = 60.0


def flux_refusal(version: str) -> str:
    """What to do about a Flux version the central Flux repo does not hold."""
    return (f"Flux {version} is not in the central Flux repo: import it with `fplus flux "
            f"import FILE` (FILE: `flux install --version={version} --export`), `POST "
            "/v1/flux-version` or `cluster-manager import-flux`, or choose an imported "
            "version (`fplus flux list`)")


def chart_refusal(chart: str, system: bool = False) -> str:
    """What to do about a chart the shared charts repo does not hold (``system``: a
    cluster's own chart, such as the system chart edge-cluster, which the API may not
    import)."""
    how = (f"`cluster-manager import-chart --system-chart {chart}-<version>.tgz` where it "
           "is a system chart (as edge-cluster is), else `fplus chart import "
           f"{chart}-<version>.tgz`" if system else
           f"`fplus chart import {chart}-<version>.tgz` (or `POST /v1/chart`)")
    return f"chart {chart} is not in the shared charts repo: import it with {how}"


class CentralFiles:
    """Answers "does the central repo hold this file?" (remembering the yeses) and "which
    values schema has this chart?"."""

    def __init__(self) -> None:
        self._seen = TTLCache(REMEMBER)  # a miss raises, and what raises is not remembered
        self._schemas = TTLCache(REMEMBER)

    def require(self, repos: RepoStore, repo: str, directory: str, file: str,
                refusal: str, field: str = "") -> None:
        """:class:`TemplateMissing` (``refusal``, and to redeploy after importing; naming
        ``field``) unless ``repo`` holds ``directory/file``."""
        path = f"{directory}/{file}"

        def present() -> bool:
            if path not in repos.read_dir(repo, directory):
                raise TemplateMissing(f"{refusal}, {AFTER_IMPORT}", field)
            return True

        self._seen.get(f"{repo}/{path}", present)

    def values_schema(self, repos: RepoStore, chart: str) -> JsonObject | None:
        """The chart's ``values.schema.json`` in the shared charts repo (None: it has none,
        or it is no JSON object)."""

        def read() -> JsonObject | None:
            found = repos.read_dir(CHARTS, chart, keep=lambda p: p == f"{chart}/{SCHEMA_FILE}")
            data = found.get(f"{chart}/{SCHEMA_FILE}")
            try:
                schema = json.loads(data) if data is not None else None
            except ValueError:
                return None
            return schema if isinstance(schema, dict) else None

        found: JsonObject | None = self._schemas.get(chart, read)
        return found


def check_central_repos(central: CentralFiles, repos: RepoStore, air_gapped: bool,
                        template: object, spec: Doc) -> str | None:
    """The Flux version the cluster's edge applies from the centre (None: none named);
    :class:`TemplateMissing` naming the field if a central repo lacks what the cluster's
    repo would name."""
    if not isinstance(template, dict):
        return None  # repo_content says why
    selected = set(bundle_files(template, spec, air_gapped))
    if air_gapped and SEALED_SECRETS_FILE in selected:
        central.require(repos, CHARTS, "sealed-secrets", CHART_FILE,
                        "air-gapped edges install the sealed-secrets chart from the "
                        "shared charts repo, which does not hold it: import it with "
                        "`cluster-manager import-chart sealed-secrets-<version>.tgz`",
                        "sealedSecrets")
    flux = flux_version(template, spec)
    if flux is not None and selected & flux_files(template):
        central.require(repos, FLUX, flux, FLUX_FILE, flux_refusal(flux), "fluxVersion")
    return flux
