"""Refusals and failures as JSON ``{"error": message}`` answers."""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify

from fplus.config_store.client import ConfigStoreError
from fplus.serving import install_json_errors, json_error

from ..changes.refusals import ChangeRefused
from ..sealing import InvalidName, ScopeError, SealingError
from ..services.errors import ApiError
from .context import services

log = logging.getLogger(__name__)


CHALLENGE = 'Basic realm="Factory+", Bearer'


def _error(status: int, message: str) -> Response:
    return json_error(status, message, challenge=CHALLENGE)


def register(app: Flask) -> None:
    """Install the error handlers."""

    @app.errorhandler(ApiError)
    def api_error(exc: ApiError) -> Response:
        resp = _error(exc.status, exc.message)
        if exc.retry_after is not None:
            resp.headers["Retry-After"] = str(exc.retry_after)
        return resp

    @app.errorhandler(ChangeRefused)
    def change_refused(exc: ChangeRefused) -> Response:
        # {error, refused: [{uuid, name, field, message}]}: each cluster and what to do
        resp = jsonify(exc.body)
        resp.status_code = exc.status
        return resp

    @app.errorhandler(SealingError)
    def sealing_error(exc: SealingError) -> Response:
        # bad path segments or ?scope= are the request's fault; checked before any write
        return _error(400 if isinstance(exc, InvalidName | ScopeError) else 422, str(exc))

    @app.errorhandler(ConfigStoreError)
    def config_store_error(exc: ConfigStoreError) -> Response:
        log.warning("Config Store request failed: %s", exc)
        services().metrics.errors.labels("config_store").inc()
        resp = _error(503, "the Config Store could not answer; try again")
        resp.headers["Retry-After"] = "5"
        return resp

    install_json_errors(app, CHALLENGE,
                        on_unhandled=lambda: services().metrics.errors.labels("http").inc())
