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
    reconciler = services().reconciler
    ready = reconciler is not None and reconciler.ready.is_set()
    depth = reconciler.queue.depth() if reconciler is not None else 0
    return jsonify({"synced": ready, "queue": depth}), 200 if ready else 503


@bp.get("/metrics")
def metrics() -> Response:
    return Response(services().metrics.exposition(), content_type=CONTENT_TYPE)


@bp.get("/openapi.yaml")
def openapi() -> Response:
    spec = resources.files("spec").joinpath("cluster-manager.yaml").read_text()
    return Response(spec, mimetype="application/yaml")
