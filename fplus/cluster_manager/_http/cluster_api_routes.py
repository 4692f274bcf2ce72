"""``/v1/cluster`` (create, list), ``GET``, ``PATCH`` and ``DELETE /v1/cluster/<c>`` and
``…/redeploy`` (ours).

``PATCH`` takes an RFC 7386 merge-patch of the configuration entry, sent as
``application/merge-patch+json`` or plain ``application/json`` (the same merge-patch: what
most clients send); ``GET`` and ``PATCH`` answer the configuration's ETag, and ``If-Match``
makes a ``PATCH`` apply only to that version (412 otherwise; without it the patch applies to
the current one)."""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from flask import Blueprint, Response, jsonify, request, url_for
from werkzeug.exceptions import BadRequest, UnsupportedMediaType

from fplus.config_store import uuids
from fplus.kubenames.labels import SelectorSyntaxError, parse_selector
from fplus.serving import JSONRejected, loads_checked

from ..services.clusters.cluster_api import Configured
from ..services.deployments.cluster_deployments import DeploymentService
from ..services.fleet.cluster_list import FleetPage, FleetQuery, FleetView
from ..services.fleet.rows import FleetRows
from .context import acting, caller, can_view, repo_head, require, require_view, services
from .params import only_query

bp = Blueprint("cluster_api", __name__)
LIST_PARAMS = ("phase", "sync", "search", "selector", "sort", "limit", "after")
TRUE, FALSE = ("true", "1", "yes", ""), ("false", "0", "no")
PATCH_TYPES = ("application/merge-patch+json", "application/json")
DRY_RUN = "dryRun"
"""``?dryRun``: answer what the change would do (:mod:`..changes.preview`), write nothing."""


@bp.post("/v1/cluster")
def create_cluster() -> tuple[Response, int]:
    who = require(uuids.EdgePerm.Clusters, uuids.NULL)
    only_query(DRY_RUN)
    shape = ("the body must be a JSON object {name, namespace, chart?, bare?, sealedSecrets?, "
             "fluxVersion?, fluxTemplate?, values?, labels?}")
    if not request.is_json:
        raise BadRequest(f"{shape} sent as Content-Type: application/json")
    try:
        body = loads_checked(request.get_data(cache=False))
    except JSONRejected as exc:
        raise BadRequest(f"{shape}: {exc}") from None
    if _flag(DRY_RUN):
        return jsonify(services().clusters.preview_create(body, str(uuidlib.uuid4()),
                                                          acting(who))), 200
    created = services().clusters.create(body, str(uuidlib.uuid4()), acting(who))
    resp = jsonify(created)
    resp.headers["Location"] = url_for("clusters.status", cluster=created["uuid"])
    return resp, 201


@bp.get("/v1/cluster")
def list_clusters() -> Response:
    who = caller()
    only_query(*LIST_PARAMS)
    page = fleet_page(lambda cluster: can_view(who, cluster), request.args)
    return jsonify({"clusters": page.clusters, "next": page.next, "counts": page.counts,
                    "total": page.total})


def fleet_page(visible: Callable[[str], bool], args: Mapping[str, str]) -> FleetPage:
    """The page of the cluster list ``args`` ask for (400 naming a bad parameter)."""
    selector = args.get("selector")
    try:
        parsed = None if selector is None else parse_selector(selector)
    except SelectorSyntaxError as exc:
        raise BadRequest(f"selector: {exc}") from None
    query = FleetQuery.parse(dict(args), parsed)
    api = services()
    rows = api.fleet_rows or FleetRows(api.cs, api.liveness)
    return FleetView(rows, repo_head, api.liveness).page(visible, query)


def _cluster(cluster: str, configured: Configured) -> Response:
    """The cluster as ``GET`` and ``PATCH`` answer it: its configuration (``labels`` always
    there), its summary (phase, lastSeen, hosts, commit), its deployments with their states,
    and the configuration's ETag."""
    summary = services().clusters.summary(cluster, datetime.now(UTC)) or {}
    config = configured.config
    deployments = DeploymentService(services().cs).of_cluster(cluster)
    tunnels = services().tunnels
    resp = jsonify({**summary, "uuid": cluster, **config, "labels": config.get("labels", {}),
                    "deployments": deployments,
                    **({"tunnel": tunnels.state(cluster)} if tunnels is not None else {})})
    resp.set_etag(configured.etag)
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.get("/v1/cluster/<cluster:cluster>")
def get_cluster(cluster: str) -> Response:
    require_view(cluster)
    only_query()
    return _cluster(cluster, services().clusters.configured(cluster))


@bp.patch("/v1/cluster/<cluster:cluster>")
def patch_cluster(cluster: str) -> Response:
    who = require(uuids.EdgePerm.Clusters, cluster)
    only_query(DRY_RUN)
    if request.mimetype not in PATCH_TYPES:
        raise UnsupportedMediaType("the body must be a JSON merge-patch of the configuration, "
                                   "sent as application/merge-patch+json (or application/json)")
    try:
        patch = loads_checked(request.get_data(cache=False))
    except JSONRejected as exc:
        raise BadRequest(f"the body must be a JSON merge-patch: {exc}") from None
    if _flag(DRY_RUN):
        return jsonify(services().clusters.preview_edit(cluster, patch, acting(who)))
    tags = request.if_match if "If-Match" in request.headers else None

    def matches(etag: str) -> bool:
        return tags is not None and (tags.star_tag or tags.contains(etag))

    return _cluster(cluster, services().clusters.edit(cluster, patch, acting(who),
                                                      None if tags is None else matches))


@bp.delete("/v1/cluster/<cluster:cluster>")
def delete_cluster(cluster: str) -> tuple[Response, int]:
    require(uuids.EdgePerm.Clusters, cluster)
    only_query("force")
    services().clusters.delete(cluster, force=_flag("force"))
    return jsonify({"uuid": cluster, "phase": "Deleting"}), 202


@bp.post("/v1/cluster/<cluster:cluster>/redeploy")
def redeploy(cluster: str) -> tuple[Response, int]:
    require(uuids.EdgePerm.Clusters, cluster)
    only_query()
    return jsonify({"uuid": cluster, "requested": services().clusters.redeploy(cluster)}), 202


def _flag(name: str) -> bool:
    value = request.args.get(name)
    if value is None:
        return False
    if value.lower() in TRUE:
        return True
    if value.lower() in FALSE:
        return False
    raise BadRequest(f"{name} must be true or false")
