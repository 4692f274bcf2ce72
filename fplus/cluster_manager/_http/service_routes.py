"""``/ping``, ``/healthz``, ``/metrics`` and ``/openapi.yaml``."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from fplus.config_store import uuids
from fplus.serving.http.openapi import document as openapi_document

from ..metrics import CONTENT_TYPE
from ..services.errors import NotFound
from .context import services

bp = Blueprint("service", __name__)
VERSION = "0.1.0"


@bp.get("/ping")
def ping() -> Response:
    """Who this is, and (an extension) ``configStore``: the Config Store's URL as users and
    edges reach it, so a client given only the Cluster Manager finds the Config Store."""
    body: dict[str, object] = {"service": uuids.Service.Clusters, "version": VERSION,
                               "software": {"vendor": "fplus-edge-manager",
                                            "application": "cluster-manager"}}
    store = services().config_store_url
    if store:
        body["configStore"] = store
    return jsonify(body)


@bp.get("/healthz")
def healthz() -> tuple[Response, int]:
    """The leader: 200 while its reconciler follows the Config Store, 503 with the ``reason``
    otherwise. A standby: 200 while it reaches the leader lease, 503 with the ``reason`` when
    it cannot. Both say their ``role`` and the lease's holder (``leader``)."""
    api = services()
    status = api.leadership.status() if api.leadership is not None else None
    reconciler = api.reconciler
    if status is not None and not status.leading:
        synced, reason, depth = False, status.problem, 0
        healthy = status.problem is None
    elif reconciler is None:
        synced, reason, depth = False, "the reconciler is not running", 0
        healthy = False
    else:
        (synced, reason), depth = reconciler.health(), reconciler.queue.depth()
        healthy = synced
    body: dict[str, object] = {"synced": synced, "queue": depth}
    if status is not None:
        body |= {"role": status.role, "identity": status.identity, "leader": status.holder}
    if reason is not None:
        body["reason"] = (f"cannot reach the leader lease: {reason}"
                          if status is not None and not status.leading else reason)
    return jsonify(body), 200 if healthy else 503


@bp.get("/metrics")
def metrics() -> Response:
    return Response(services().metrics.exposition(), content_type=CONTENT_TYPE)


@bp.get("/openapi.yaml")
def openapi() -> Response:
    spec = openapi_document("cluster-manager.yaml", services().external_url or request.host_url)
    if spec is None:
        raise NotFound("no OpenAPI document installed")
    return Response(spec, mimetype="application/yaml")
