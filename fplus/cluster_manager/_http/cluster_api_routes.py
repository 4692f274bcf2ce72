"""``/v1/cluster`` (create, list), ``DELETE /v1/cluster/<c>`` and ``…/redeploy`` (ours)."""

from __future__ import annotations

import uuid as uuidlib

from flask import Blueprint, Response, jsonify, request, url_for
from werkzeug.exceptions import BadRequest

from fplus.config_store import uuids
from fplus.serving import JSONRejected, loads_checked

from .context import caller, can_view, require, services
from .params import only_query

bp = Blueprint("cluster_api", __name__)
PHASES = ("Pending", "Failed", "Provisioning", "Ready", "Online", "Stale", "Offline",
          "Deleting")
TRUE, FALSE = ("true", "1", "yes", ""), ("false", "0", "no")


@bp.post("/v1/cluster")
def create_cluster() -> tuple[Response, int]:
    who = require(uuids.EdgePerm.Clusters, uuids.NULL)
    only_query()
    shape = ("the body must be a JSON object {name, namespace, chart?, bare?, sealedSecrets?, "
             "fluxVersion?, values?, labels?}")
    if not request.is_json:
        raise BadRequest(f"{shape} sent as Content-Type: application/json")
    try:
        body = loads_checked(request.get_data(cache=False))
    except JSONRejected as exc:
        raise BadRequest(f"{shape}: {exc}") from None
    created = services().clusters.create(body, str(uuidlib.uuid4()), who)
    resp = jsonify(created)
    resp.headers["Location"] = url_for("clusters.status", cluster=created["uuid"])
    return resp, 201


@bp.get("/v1/cluster")
def list_clusters() -> Response:
    who = caller()
    only_query("phase", "limit", "after")
    phase = request.args.get("phase")
    if phase is not None and phase not in PHASES:
        raise BadRequest(f"phase must be one of {', '.join(PHASES)}")
    limit = request.args.get("limit", "100")
    if not limit.isdigit() or not 1 <= int(limit) <= 1000:
        raise BadRequest("limit must be a whole number from 1 to 1000")
    after = request.args.get("after")
    if after is not None and not uuids.is_uuid(after):
        raise BadRequest("after must be a cluster UUID (the `next` of the previous page)")
    api = services()
    page = api.clusters.page(
        lambda cluster: can_view(who, cluster),
        phase=phase, after=after, limit=int(limit))
    return jsonify({"clusters": page.clusters, "next": page.next})


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
