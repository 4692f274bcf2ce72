"""The Git server's Flask application factory."""

from __future__ import annotations

from flask import Flask

from . import errors, repo_routes, status_routes, storage_routes
from .context import GitServer


def create_app(server: GitServer) -> Flask:
    """A Flask app serving ``server``."""
    app = Flask("git_server", static_folder=None)
    app.extensions["git_server"] = server
    errors.register(app)
    for bp in (repo_routes.bp, status_routes.bp, storage_routes.bp):
        app.register_blueprint(bp)
    return app
