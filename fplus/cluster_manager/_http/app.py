"""The Cluster Manager's Flask application factory."""

from __future__ import annotations

from flask import Flask
from flask.json.provider import DefaultJSONProvider

from fplus.serving import refuse_oversized

from . import (
    audit_routes,
    chart_routes,
    cluster_api_routes,
    cluster_routes,
    console,
    deployment_routes,
    errors,
    fleet_routes,
    kube_routes,
    secret_routes,
    service_routes,
    window_routes,
)
from .context import ApiServices
from .params import ChartConverter, ClusterConverter, DeploymentConverter, FleetConverter

DEFAULT_BODY_LIMIT = 1024 * 1024


def create_app(api: ApiServices, body_limit: int = DEFAULT_BODY_LIMIT) -> Flask:
    """A Flask app serving the Cluster Manager's HTTP API with ``api``."""
    app = Flask("cluster_manager", static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = body_limit
    assert isinstance(app.json, DefaultJSONProvider)  # Flask's own, which can keep key order
    app.json.sort_keys = False
    app.extensions["cluster_manager"] = api
    app.url_map.converters["cluster"] = ClusterConverter
    app.url_map.converters["deployment"] = DeploymentConverter
    app.url_map.converters["chart"] = ChartConverter
    app.url_map.converters["fleet"] = FleetConverter
    app.before_request(refuse_oversized)
    errors.register(app)
    for bp in (service_routes.bp, cluster_api_routes.bp, cluster_routes.bp, secret_routes.bp,
               deployment_routes.bp, chart_routes.bp, fleet_routes.bp, audit_routes.bp,
               window_routes.bp, kube_routes.bp, console.bp):
        app.register_blueprint(bp)
    return app
