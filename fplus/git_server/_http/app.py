"""The Git server's Flask application factory."""

from __future__ import annotations

from flask import Flask

from .._notify.watches import WatchSettings
from . import errors, repo_routes, status_routes, storage_routes
from .context import GitServer
from .metrics import GitMetrics
from .notify_routes import install_notify


def create_app(server: GitServer, notify: WatchSettings | None = None) -> Flask:
    """A Flask app serving ``server`` (notify/v2 with ``notify``, default settings if None)."""
    app = Flask("git_server", static_folder=None)
    app.extensions["git_server"] = server
    errors.register(app)
    for bp in (repo_routes.bp, status_routes.bp, storage_routes.bp):
        app.register_blueprint(bp)
    install_notify(app, notify or WatchSettings())
    GitMetrics().install(app)
    return app
