"""``/ping``, ``/healthz``, ``/metrics`` and ``/openapi.yaml``."""

from __future__ import annotations

from importlib import resources

from flask import Blueprint, Response, jsonify

from config_store import uuids

from ..metrics import CONTENT_TYPE
from .context import services

bp = Blueprint("service", __name__)
VERSION = "0.1.0"


@bp.get("/ping")
def ping() -> Response:
    return jsonify({"service": uuids.Service.Clusters, "version": VERSION,
                    "software": {"vendor": "fplus-edge-manager",
                                 "application": "cluster-manager"}})


@bp.get("/healthz")
def healthz() -> tuple[Response, int]:
    """200 while the reconciler follows the Config Store; 503 with the ``reason`` otherwise."""
    reconciler = services().reconciler
    if reconciler is None:
        synced, reason, depth = False, "the reconciler is not running", 0
    else:
        (synced, reason), depth = reconciler.health(), reconciler.queue.depth()
    body: dict[str, object] = {"synced": synced, "queue": depth}
    if reason is not None:
        body["reason"] = reason
    return jsonify(body), 200 if synced else 503


@bp.get("/metrics")
def metrics() -> Response:
    return Response(services().metrics.exposition(), content_type=CONTENT_TYPE)


@bp.get("/openapi.yaml")
def openapi() -> Response:
    spec = resources.files("spec").joinpath("cluster-manager.yaml").read_text()
    return Response(spec, mimetype="application/yaml")
