"""Imports into the central repos, the one owner for ``cluster-manager import-chart`` /
``import-flux`` and ``POST /v1/chart`` / ``POST /v1/flux-version``: a checked Helm chart
into the shared charts repo under ``<name>/``, a checked `flux install --export` into the
central Flux repo under ``<version>/``, committed as the Cluster Manager's own principal
(replacing an earlier import of the same chart or version), after which every cluster that
failed for want of an import is asked to try again. Input is checked whole
(:mod:`...formats.helm_chart`, :mod:`...formats.flux_export`) before anything is written, so a
refusal writes nothing. A chart may not take a name the product gives its own Flux objects
and repos (:data:`RESERVED`), nor a system chart's (the one every cluster runs): only
``cluster-manager import-chart --system-chart`` replaces a system chart, never the API."""

from __future__ import annotations

from dataclasses import dataclass

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.git.repo import ChangeSet, InvalidPath
from fplus.git.store import RepoStore

from ...formats.flux_export import FILE_NAME, FluxExport, FluxExportError, read_flux_export
from ...formats.helm_chart import Chart, ChartError, read_chart_archive, read_chart_files
from ...model.apps_and_roles import AFTER_IMPORT, STATUS_APP
from ...model.setup_status import FAILED
from ..clusters.cluster_api import request_redeploy
from ..deployments.system_charts import system_chart_names
from ..errors import Unprocessable
from .chart_templates import ChartService

CHARTS_REPO = uuids.Shared.HelmChartsRepo
FLUX_REPO = uuids.Shared.FluxSystemRepo
RESERVED = ("edge-sync", "flux-system", "flux-system-central", "helm-charts", "self-link")
"""Names of the Flux objects and repos a cluster's repo is made of (the Flux template's):
never a chart's."""


class ImportRefused(ValueError):
    """Not something we import (a chart, a Flux export); the message says why."""


@dataclass(frozen=True)
class Import:
    """What one import commits: into which repo, which files, and what it is."""

    repo: str
    changes: ChangeSet
    kind: str
    """``chart`` or ``flux``."""
    name: str
    """The chart's name (for Flux: ``flux``)."""
    version: str
    files: int

    @property
    def what(self) -> str:
        return (f"chart {self.name} {self.version}" if self.kind == "chart"
                else f"Flux {self.version}")


def chart_import(chart: Chart) -> Import:
    """The import of ``chart`` (its directory replaced whole)."""
    try:
        changes = ChangeSet(writes=chart.repo_files(), replace_dirs=frozenset({chart.name}))
    except InvalidPath as exc:
        raise ImportRefused(str(exc)) from None
    return Import(CHARTS_REPO, changes, "chart", chart.name, chart.version, len(chart.files))


def check_chart_name(cs: ConfigStoreClient, name: str, *, system_chart: bool) -> None:
    """:class:`ImportRefused` for a :data:`RESERVED` name, and for a system chart's unless
    ``system_chart`` (the CLI's ``--system-chart``) says this import is meant to replace it."""
    if name in RESERVED:
        raise ImportRefused(f"chart name {name} is reserved (the product names its own Flux "
                            f"objects and repos so: {', '.join(RESERVED)})")
    if not system_chart and name in system_chart_names(cs):
        raise ImportRefused(f"chart {name} is a system chart (the Cluster Manager deploys it "
                            "to every cluster): only `cluster-manager import-chart "
                            "--system-chart` replaces it, never the API")


def flux_import(export: FluxExport) -> Import:
    """The import of ``export`` (its version's directory replaced whole)."""
    try:
        changes = ChangeSet(writes=export.repo_files(),
                            replace_dirs=frozenset({export.version}))
    except InvalidPath as exc:
        raise ImportRefused(str(exc)) from None
    return Import(FLUX_REPO, changes, "flux", "flux", export.version, 1)


def read_flux_bytes(data: bytes, where: str) -> FluxExport:
    """The export in ``data`` (UTF-8), checked; :class:`FluxExportError` if refused."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FluxExportError(f"{where} is not UTF-8 text: {exc}") from None
    return read_flux_export(text, where)


def retry_waiting_clusters(cs: ConfigStoreClient) -> int:
    """Request a redeploy of every Failed cluster whose error asks for an import first."""
    failed = cs.search(STATUS_APP, {"phase": FAILED}, {"error": "error"}) or {}
    waiting = sorted(c for c, found in failed.items()
                     if isinstance(found.get("error"), str) and AFTER_IMPORT in found["error"])
    for cluster in waiting:
        request_redeploy(cs, cluster)
    return len(waiting)


@dataclass(frozen=True)
class Imported:
    """The outcome of :func:`commit`."""

    commit: str | None
    changed: bool
    retried: int


def commit(repos: RepoStore, cs: ConfigStoreClient, wanted: Import) -> Imported:
    """Commit ``wanted`` (no commit if it is already there as it is), then ask the clusters
    waiting for an import to try again."""
    result = repos.write(wanted.repo, wanted.changes, f"Import {wanted.what}")
    return Imported(result.commit, result.changed, retry_waiting_clusters(cs))


class ImportService:
    """Imports over the API: request bodies in, what was committed out."""

    def __init__(self, cs: ConfigStoreClient, repos: RepoStore) -> None:
        self.cs = cs
        self.repos = repos

    def import_chart(self, body: bytes, template: str | None = None,
                     writer: ConfigStoreClient | None = None) -> dict[str, object]:
        """``{chart, version, files, commit, changed, retried, template?}``; 422 naming what
        is wrong with the archive, nothing written. With ``template``, a Helm chart template
        of that name is created for the chart as ``writer`` (the caller) first, so a refusal
        there commits nothing either."""
        try:
            wanted = chart_import(read_chart_archive(body, "the chart archive"))
            check_chart_name(self.cs, wanted.name, system_chart=False)
        except (ChartError, ImportRefused) as exc:
            raise Unprocessable(f"{exc}; nothing was imported") from None
        charts, made = ChartService(self.cs), None
        if template is not None and writer is not None:
            charts.check_new_name(template)
            made = charts.create(template, wanted.name, writer)
        try:
            done = commit(self.repos, self.cs, wanted)
        except Exception:
            if made is not None and writer is not None:
                charts.discard(made, writer)  # the template names a chart never committed
            raise
        shown: dict[str, object] = {
            "chart": wanted.name, "version": wanted.version, "files": wanted.files,
            "commit": done.commit, "changed": done.changed, "retried": done.retried}
        if made is not None:
            shown["template"] = made
        return shown

    def import_flux(self, body: bytes) -> dict[str, object]:
        """``{version, commit, changed, retried}``; 422 naming what is wrong, nothing
        written."""
        try:
            wanted = flux_import(read_flux_bytes(body, "the Flux export"))
        except (FluxExportError, ImportRefused) as exc:
            raise Unprocessable(f"{exc}; nothing was imported") from None
        done = commit(self.repos, self.cs, wanted)
        return {"version": wanted.version, "commit": done.commit, "changed": done.changed,
                "retried": done.retried}

    def flux_versions(self) -> list[str]:
        """The Flux versions in the central Flux repo, oldest first."""
        files = self.repos.read_dir(FLUX_REPO, "", keep=lambda path: path.count("/") == 1
                                    and path.endswith(f"/{FILE_NAME}"))
        return sorted({path.split("/")[0] for path in files}, key=_version_key)

    def charts(self) -> list[dict[str, str]]:
        """``{name, version}`` of each chart in the shared charts repo, by name (a directory
        whose ``Chart.yaml`` no longer reads is shown with version ``?``)."""
        files = self.repos.read_dir(CHARTS_REPO, "", keep=lambda path: path.count("/") == 1
                                    and path.endswith("/Chart.yaml"))
        found = []
        for path, data in sorted(files.items()):
            directory = path.split("/")[0]
            try:
                version = read_chart_files({"Chart.yaml": data}, path).version
            except ChartError:
                version = "?"
            found.append({"name": directory, "version": version})
        return found


def _version_key(version: str) -> tuple[tuple[int, ...], str]:
    """``v2.10.0`` after ``v2.9.1``: numbers compared as numbers."""
    core = version.lstrip("v").split("-")[0].split("+")[0]
    try:
        return tuple(int(part) for part in core.split(".")), version
    except ValueError:
        return (), version
