"""``/v1/cluster/<c>/secret…``: seal, remove and list sealed secrets (ACS §3.7 + listing)."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from fplus.config_store import uuids

from ..api.errors import BadRequest
from .context import require, services
from .params import only_query

bp = Blueprint("secrets", __name__)
ONE_KEY = "/v1/cluster/<cluster:cluster>/secret/<namespace>/<name>/<key>"


def _dryrun() -> bool:
    return "dryrun" in request.args  # presence counts, whatever the value (as ACS)


@bp.put(ONE_KEY)
def put_secret(cluster: str, namespace: str, name: str, key: str) -> tuple[str, int]:
    who = require(uuids.EdgePerm.Secrets, cluster)
    only_query("dryrun", "scope")
    api = services()
    value = request.get_data(cache=False)
    try:
        api.secrets.seal(cluster, namespace, name, key, value,
                         scope=request.args.get("scope"), dryrun=_dryrun(), sealed_by=who.uuid)
    except Exception:
        api.metrics.seals.labels("seal", "refused").inc()
        raise
    api.metrics.seals.labels("seal", "dryrun" if _dryrun() else "sealed").inc()
    return "", 204


@bp.delete(ONE_KEY)
def delete_secret(cluster: str, namespace: str, name: str, key: str) -> tuple[str, int]:
    require(uuids.EdgePerm.Secrets, cluster)
    only_query("dryrun")
    api = services()
    try:
        api.secrets.remove(cluster, namespace, name, key, dryrun=_dryrun())
    except Exception:
        api.metrics.seals.labels("remove", "refused").inc()
        raise
    api.metrics.seals.labels("remove", "dryrun" if _dryrun() else "removed").inc()
    return "", 204


@bp.get("/v1/cluster/<cluster:cluster>/secret")
def list_secrets(cluster: str) -> Response:
    require(uuids.EdgePerm.Secrets, cluster)
    only_query("unused")
    unused = request.args.get("unused", "false")
    if unused not in ("true", "false"):
        raise BadRequest("unused must be true or false")
    return jsonify(services().secrets.listing(cluster, unused=unused == "true"))
