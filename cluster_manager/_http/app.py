"""The Cluster Manager's Flask app (ping and reconciler health for now)."""

from __future__ import annotations

from flask import Flask, Response, jsonify

from config_store import uuids

from ..reconciler import Reconciler

VERSION = "0.1.0"


def create_app(reconciler: Reconciler) -> Flask:
    """A Flask app for the running ``reconciler``."""
    app = Flask("cluster_manager", static_folder=None)

    @app.get("/ping")
    def ping() -> Response:
        return jsonify({"service": uuids.Service.Clusters, "version": VERSION,
                        "software": {"vendor": "fplus-edge-manager",
                                     "application": "cluster-manager"}})

    @app.get("/healthz")
    def healthz() -> tuple[Response, int]:
        ready = reconciler.ready.is_set()
        return jsonify({"synced": ready, "queue": reconciler.queue.depth()}), 200 if ready else 503

    return app
