"""``/v1/cluster/<c>/deployment[/<d>]``: one cluster's Edge deployments
(:mod:`..services.deployments.cluster_deployments`). Reading takes what seeing the cluster
takes, writing what managing it takes (Edge permission *Clusters* on it)."""

from __future__ import annotations

from collections.abc import Mapping

from flask import Blueprint, Response, jsonify, request, url_for

from fplus.config_store import uuids
from fplus.serving import JSONRejected, loads_checked

from ..services.deployments.cluster_deployments import DeploymentService, view
from ..services.errors import BadRequest
from .context import require, require_view, services
from .params import only_query

bp = Blueprint("deployments", __name__)
SHAPE = ("the body must be a JSON object {name, chart, hostname?, values?} sent as "
         "application/json")
PATCH_SHAPE = ("the body must be a JSON merge patch of {name, chart, hostname, values} sent "
               "as application/merge-patch+json (or application/json)")


def _deployments() -> DeploymentService:
    return DeploymentService(services().cs)


def _body(shape: str) -> object:
    if not request.is_json:
        raise BadRequest(shape)
    try:
        return loads_checked(request.get_data(cache=False))
    except JSONRejected as exc:
        raise BadRequest(f"{shape}: {exc}") from None


def _with_etag(body: Mapping[str, object], etag: str | None) -> Response:
    resp = jsonify(body)
    if etag:
        resp.headers["ETag"] = f'"{etag}"'
    return resp


@bp.post("/v1/cluster/<cluster:cluster>/deployment")
def create(cluster: str) -> tuple[Response, int]:
    require(uuids.EdgePerm.Clusters, cluster)
    only_query()
    created = _deployments().create(cluster, _body(SHAPE))
    resp = jsonify(created)
    resp.headers["Location"] = url_for("deployments.get_one", cluster=cluster,
                                       deployment=created["uuid"])
    return resp, 201


@bp.get("/v1/cluster/<cluster:cluster>/deployment")
def list_all(cluster: str) -> Response:
    require_view(cluster)
    only_query()
    return jsonify({"deployments": _deployments().of_cluster(cluster)})


@bp.get("/v1/cluster/<cluster:cluster>/deployment/<deployment:deployment>")
def get_one(cluster: str, deployment: str) -> Response:
    require_view(cluster)
    only_query()
    found, etag = _deployments().shown(cluster, deployment)
    return _with_etag(found, etag)


@bp.patch("/v1/cluster/<cluster:cluster>/deployment/<deployment:deployment>")
def patch(cluster: str, deployment: str) -> Response:
    require(uuids.EdgePerm.Clusters, cluster)
    only_query()
    found, etag = _deployments().patch(cluster, deployment, _body(PATCH_SHAPE),
                                       request.headers.get("If-Match"))
    return _with_etag(view(found), etag)


@bp.delete("/v1/cluster/<cluster:cluster>/deployment/<deployment:deployment>")
def delete(cluster: str, deployment: str) -> tuple[str, int]:
    require(uuids.EdgePerm.Clusters, cluster)
    only_query()
    _deployments().delete(cluster, deployment, request.headers.get("If-Match"))
    return "", 204
