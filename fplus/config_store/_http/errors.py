"""Turning domain errors and HTTP exceptions into JSON responses."""

from __future__ import annotations

from flask import Flask, Response, jsonify

from fplus.serving import install_json_errors, json_error

from .._domain.common.errors import DomainError
from .._storage import StorageUnavailable

CHALLENGE = 'Basic realm="Factory+"'
RETRY_AFTER_S = 5
"""What a 503 for an unreachable database asks clients to wait."""


def _error(status: int, message: str, body: object = None) -> Response:
    return json_error(status, message, body=body, challenge=CHALLENGE)


def register(app: Flask) -> None:
    """Install the error handlers."""

    @app.errorhandler(DomainError)
    def domain_error(exc: DomainError) -> Response:
        body = exc.body if isinstance(exc.body, list) else None
        resp = _error(exc.status, exc.message, body)
        if isinstance(exc.body, dict):
            resp.set_data(jsonify({"error": exc.message, **exc.body}).get_data())
        if exc.retry_after is not None:
            resp.headers["Retry-After"] = str(exc.retry_after)
        return resp

    @app.errorhandler(StorageUnavailable)
    def storage_unavailable(exc: StorageUnavailable) -> Response:
        resp = _error(503, str(exc))
        resp.headers["Retry-After"] = str(RETRY_AFTER_S)
        return resp

    install_json_errors(app, CHALLENGE)
