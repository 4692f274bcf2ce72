"""The Config Store's Flask application factory."""

from __future__ import annotations

from dataclasses import dataclass, field

from flask import Flask
from flask.json.provider import DefaultJSONProvider

from fplus.serving import refuse_oversized
from fplus.serving.http.metrics import HttpMetrics

from .._domain.store import Store
from . import (
    app_routes,
    audit_routes,
    auth,
    auth_routes,
    batch_routes,
    directory_routes,
    errors,
    grant_routes,
    identity_routes,
    legacy_auth_routes,
    misc_routes,
    object_routes,
    v1_routes,
)
from .gate import AdmissionSettings, install_gate
from .notify_metrics import track_notify
from .notify_ws import NotifySettings, install_notify
from .params import UUIDConverter


@dataclass(frozen=True)
class Settings:
    """HTTP settings."""

    body_limit: int = 1024 * 1024
    batch_max_operations: int = batch_routes.DEFAULT_MAX_OPERATIONS
    """Operations one ``POST /v2/batch`` may carry (more: 413)."""
    device_uuid: str | None = None
    notify: NotifySettings = field(default_factory=NotifySettings)
    admission: AdmissionSettings = field(default_factory=AdmissionSettings)
    """How fast new sessions and password checks are let in (:mod:`.gate`)."""


def create_app(store: Store, settings: Settings | None = None) -> Flask:
    """A Flask app serving ``store``."""
    settings = settings or Settings()
    app = Flask("config_store", static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = settings.body_limit
    app.config["DEVICE_UUID"] = settings.device_uuid
    app.config[batch_routes.MAX_OPERATIONS] = settings.batch_max_operations
    assert isinstance(app.json, DefaultJSONProvider)  # Flask's own, which can keep key order
    app.json.sort_keys = False
    app.extensions["config_store"] = store
    app.url_map.converters["uuid"] = UUIDConverter
    app.url_map.strict_slashes = False
    app.before_request(refuse_oversized)
    app.before_request(auth.authenticate)
    errors.register(app)
    for bp in (misc_routes.bp, auth_routes.bp, identity_routes.bp, grant_routes.bp,
               legacy_auth_routes.bp, object_routes.bp, app_routes.bp, v1_routes.bp,
               directory_routes.bp, audit_routes.bp, batch_routes.bp):
        app.register_blueprint(bp)
    install_notify(app, store, settings.notify)
    metrics = HttpMetrics("config_store")
    metrics.install(app)
    track_notify(metrics.registry, app.extensions["notify"][1])
    app.wsgi_app = v1_routes.forward_v1(app.wsgi_app)  # type: ignore[method-assign]
    install_gate(app, settings.admission)  # outermost: a refusal costs nothing else
    return app
