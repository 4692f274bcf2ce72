"""The per-cluster deployment API: create, list, read, merge-patch and delete the Edge
deployments of one cluster, written as ACS writes them
(:mod:`fplus.cluster_manager.model.edge_deployments`).

Every write is checked first, and a refusal writes nothing: the chart must be a Helm chart
template entry, a pinned ``hostname`` one the cluster's Edge Sync reported (its Edge cluster
status ``hosts``), ``values`` an object, and the name free on that cluster (409: people and
the CLI name deployments by it); ``dependsOn`` must name deployments of the cluster without
making a cycle (422 naming it). The placeholders of the cluster in ``values``
(``{{cluster.labels.site}}``: :mod:`...model.deployment_values`) are filled in as it is
written, a placeholder without a value refused (422 naming it). A deployment owned by a
fleet deployment is listed but only its fleet deployment changes it (409 naming it). The
ETag of a deployment is its entry's.
"""

from __future__ import annotations

import contextlib
import logging
import uuid as uuidlib
from typing import cast

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient, ConfigStoreError
from fplus.config_store.client import PreconditionFailed as StaleEntry
from fplus.config_store.client import Unprocessable as EntryRefused
from fplus.jsontypes import JsonObject, is_object

from ...model import edge_deployments as model
from ...model.apps_and_roles import CONFIG_APP, STATUS_APP
from ...model.deployment_order import order_refusal
from ...model.deployment_state import READY, deployment_state
from ...model.deployment_values import ClusterMeta, ValuesError, resolve, template_errors
from ...model.edge_deployments import Deployment, DeploymentRequest
from ..clusters.edge_status import EdgeStatusUnreadable, read_edge_status
from ..errors import Conflict, NotFound, PreconditionFailed, Unprocessable
from .system_charts import is_system_chart, system_chart_refusal

log = logging.getLogger(__name__)


def merge_patch(target: object, patch: object) -> object:
    """RFC 7386 JSON merge patch of ``target`` by ``patch`` (``null`` removes a member)."""
    if not is_object(patch):
        return patch
    merged = dict(target) if is_object(target) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def view(deployment: Deployment) -> dict[str, object]:
    """A deployment as the API answers it (``hostname`` null: floating)."""
    shown: dict[str, object] = {
        "uuid": deployment.uuid, "name": deployment.name, "cluster": deployment.cluster,
        "chart": deployment.chart, "hostname": deployment.hostname,
        "values": dict(deployment.values or {}), "dependsOn": list(deployment.depends_on),
        "driftDetection": deployment.drift, "createdAt": deployment.created_at}
    if deployment.fleet is not None:
        shown[model.FLEET_KEY] = deployment.fleet
    return shown


def with_states(deployments: list[Deployment],
                edge: dict[str, object] | None) -> list[dict[str, object]]:
    """The views of one cluster's deployments by name, each with its ``state``,
    ``message``, ``commit``, ``drifted`` and ``waitingOn`` (the names of those it depends
    on that are not ready while helm-controller holds it back)."""
    states = {d.uuid: deployment_state(d.uuid, edge) for d in deployments}
    ready = {d.name for d in deployments if states[d.uuid].state == READY}
    shown = []
    for deployment in sorted(deployments, key=lambda d: (d.name, d.uuid)):
        state = states[deployment.uuid]
        waiting = [n for n in deployment.depends_on if n not in ready] if state.waiting else []
        shown.append(view(deployment) | {"state": state.state, "message": state.message,
                                         "commit": state.commit, "drifted": state.drifted,
                                         "waitingOn": waiting})
    return shown


def reported_hosts(cs: ConfigStoreClient, cluster: str) -> list[str]:
    """The host names the cluster's Edge Sync reported (none before it reports)."""
    hosts = (read_edge_status(cs, cluster) or {}).get("hosts")
    if not isinstance(hosts, list):
        return []
    return [h["hostname"] for h in hosts
            if isinstance(h, dict) and isinstance(h.get("hostname"), str)]


def _refused(errors: dict[str, str]) -> Unprocessable:
    return Unprocessable("; ".join(f"{field}: {why}" if field else why
                                   for field, why in sorted(errors.items())))


def _checked(body: object) -> DeploymentRequest:
    """``body`` as a whole deployment request; 422 naming every refused field."""
    errors = model.request_errors(body)
    if errors or not is_object(body):
        raise _refused(errors)
    return cast(DeploymentRequest, body)  # request_errors checked every field


class DeploymentService:
    """One cluster's Edge deployments, as the API sees them."""

    def __init__(self, cs: ConfigStoreClient) -> None:
        self.cs = cs

    def _known(self, cluster: str, *, writing: bool = False) -> None:
        """404 unless the cluster exists (to write: unless it is configured, not going)."""
        if self.cs.get_config(CONFIG_APP, cluster) is not None:
            return
        if not writing and self.cs.get_config(STATUS_APP, cluster) is not None:
            return
        raise NotFound(f"unknown cluster {cluster}")

    def of_cluster(self, cluster: str) -> list[dict[str, object]]:
        """The cluster's deployments, by name, each with its ``state``, ``message`` and
        ``commit`` from the edge's report (:mod:`...model.deployment_state`), whether the
        edge reports it ``drifted`` and the deployments it is ``waitingOn``."""
        self._known(cluster)
        return with_states(list(model.of_cluster(self.cs, cluster).values()),
                           self._edge(cluster))

    def _edge(self, cluster: str) -> dict[str, object] | None:
        """The edge's status entry; an unreadable one counts as no report (every state
        unknown; the cluster's status route says why)."""
        try:
            return read_edge_status(self.cs, cluster)
        except EdgeStatusUnreadable:
            return None

    def get(self, cluster: str, deployment: str) -> tuple[Deployment, str | None]:
        """One deployment of the cluster and its ETag (404 if it is not the cluster's)."""
        self._known(cluster)
        entry, etag = self.cs.get_config_with_etag(model.DEPLOYMENT_APP, deployment)
        found = Deployment.parse(deployment, entry)
        if found is None or found.cluster != cluster:
            raise NotFound(f"cluster {cluster} has no deployment {deployment}")
        return found, etag

    def shown(self, cluster: str, deployment: str) -> tuple[dict[str, object], str | None]:
        """One deployment as :meth:`of_cluster` shows it (with its state, ``drifted`` and
        ``waitingOn``), and its ETag."""
        found, etag = self.get(cluster, deployment)
        mine = model.of_cluster(self.cs, cluster) | {found.uuid: found}
        states = with_states(list(mine.values()), self._edge(cluster))
        return next(s for s in states if s["uuid"] == found.uuid), etag

    def create(self, cluster: str, body: object) -> dict[str, object]:
        """A new deployment on the cluster from a request body ``{name, chart, hostname?,
        values?}``."""
        request = _checked(body)
        self._known(cluster, writing=True)
        self._check(cluster, request, None)
        deployment = Deployment(str(uuidlib.uuid4()), request["name"], cluster,
                                request["chart"], request.get("hostname"),
                                self._resolved(cluster, request),
                                depends_on=tuple(request.get("dependsOn") or ()),
                                drift=request.get("driftDetection"))
        try:
            model.write(self.cs, deployment, new=True)
        except Exception as exc:
            with contextlib.suppress(ConfigStoreError):  # leave nothing of a half-made one
                model.remove(self.cs, deployment.uuid)
            if isinstance(exc, EntryRefused):
                raise Unprocessable(f"the Config Store refused the entry: {exc}") from exc
            raise
        log.info("cluster %s: deployment %s (%s) created", cluster, deployment.uuid,
                 deployment.name)
        return self.shown(cluster, deployment.uuid)[0]

    def patch(self, cluster: str, deployment: str, patch: object,
              if_match: str | None = None) -> tuple[Deployment, str | None]:
        """Merge-patch a deployment's ``{name, chart, hostname, values}`` (``hostname``
        null: floating); 412 if ``if_match`` is not its ETag."""
        errors = model.request_errors(patch, partial=True)
        if errors:
            raise _refused(errors)
        current, etag = self._changeable(cluster, deployment, if_match)
        stored = {"name": current.name, "chart": current.chart,
                  "hostname": current.hostname, "values": current.values,
                  "dependsOn": list(current.depends_on) or None,
                  "driftDetection": current.drift}
        request = _checked(merge_patch({k: v for k, v in stored.items() if v is not None},
                                       patch))
        self._check(cluster, request, current)
        updated = Deployment(current.uuid, request["name"], cluster, request["chart"],
                             request.get("hostname"), self._resolved(cluster, request),
                             None, current.created_at,
                             tuple(request.get("dependsOn") or ()),
                             request.get("driftDetection"))
        try:
            model.write(self.cs, updated, if_match=etag)
        except StaleEntry:
            raise PreconditionFailed(f"deployment {deployment} changed meanwhile; read it "
                                     "again") from None
        except EntryRefused as exc:
            raise Unprocessable(f"the Config Store refused the entry: {exc}") from exc
        log.info("cluster %s: deployment %s changed (host %s)", cluster, deployment,
                 updated.hostname or "floating")
        return self.get(cluster, deployment)

    def delete(self, cluster: str, deployment: str, if_match: str | None = None) -> None:
        """Delete a deployment (Edge Sync on the cluster then uninstalls it)."""
        self._changeable(cluster, deployment, if_match, writing=False)
        model.remove(self.cs, deployment)
        log.info("cluster %s: deployment %s deleted", cluster, deployment)

    def _resolved(self, cluster: str, request: DeploymentRequest) -> JsonObject | None:
        """The request's ``values`` with the cluster's placeholders filled in (stored so:
        the entry shows what the edge gets); 422 naming one the cluster has no value for."""
        values = request.get("values")
        if not values:
            return None
        errors = template_errors(values, "values")
        if errors:
            raise _refused(errors)
        meta = ClusterMeta.of(cluster, self.cs.get_config(CONFIG_APP, cluster),
                              request.get("hostname"))
        try:
            return resolve(values, meta) or None
        except ValuesError as exc:
            raise Unprocessable(str(exc)) from None

    def _changeable(self, cluster: str, deployment: str, if_match: str | None, *,
                    writing: bool = True) -> tuple[Deployment, str | None]:
        """The deployment and its ETag, if this API may change it and ``if_match`` (when
        given, ``*``: any) is that ETag; ``writing=False``: also on a cluster being deleted
        (a deployment may always be removed)."""
        self._known(cluster, writing=writing)
        current, etag = self.get(cluster, deployment)
        if current.fleet is not None:
            raise Conflict(f"deployment {deployment} belongs to fleet deployment "
                           f"{current.fleet}; change or delete that instead")
        if if_match not in (None, "*") and if_match.strip('"') != (etag or "").strip('"'):
            raise PreconditionFailed(f"deployment {deployment} has changed (its ETag is no "
                                     "longer the one given); read it again")
        return current, etag

    def _check(self, cluster: str, request: DeploymentRequest,
               current: Deployment | None) -> None:
        """422 for a chart that is no template or a host the cluster never reported; 409
        for a name another deployment of the cluster has."""
        errors: dict[str, str] = {}
        chart = request["chart"]
        if current is None or chart != current.chart:
            if self.cs.get_config(uuids.App.HelmChartTemplate, chart) is None:
                errors["chart"] = f"no Helm chart template {chart} (see GET /v1/chart)"
            elif is_system_chart(self.cs, chart):
                errors["chart"] = system_chart_refusal(chart)
        host = request.get("hostname")
        if host is not None and (current is None or host != current.hostname):
            hosts = reported_hosts(self.cs, cluster)
            if host not in hosts:
                errors["hostname"] = (f"cluster {cluster} reported no host {host!r} (its "
                                      f"hosts: {', '.join(hosts) or 'none yet'}); give a "
                                      "reported host, or none for floating")
        if errors:
            raise _refused(errors)
        others = [d for d in model.of_cluster(self.cs, cluster).values()
                  if current is None or d.uuid != current.uuid]
        if current is None or request["name"] != current.name:
            for other in others:
                if other.name == request["name"]:
                    raise Conflict(f"name: cluster {cluster} already has a deployment "
                                   f"{other.name!r} ({other.uuid})")
        if request.get("dependsOn"):
            graph = {d.name: d.depends_on for d in others}
            graph[request["name"]] = tuple(request.get("dependsOn") or ())
            if (why := order_refusal(graph, request["name"])) is not None:
                raise Unprocessable(why)
