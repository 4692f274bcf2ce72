"""Turning domain errors and HTTP exceptions into JSON responses."""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from .._domain.errors import DomainError

log = logging.getLogger(__name__)


def _error(status: int, message: str, body: object = None) -> Response:
    resp = jsonify(body if body is not None else {"error": message})
    resp.status_code = status
    if status == 401:
        resp.headers["WWW-Authenticate"] = 'Basic realm="Factory+"'
    return resp


def register(app: Flask) -> None:
    """Install the error handlers."""

    @app.errorhandler(DomainError)
    def domain_error(exc: DomainError) -> Response:
        body = exc.body if isinstance(exc.body, list) else None
        resp = _error(exc.status, exc.message, body)
        if isinstance(exc.body, dict):
            resp.set_data(jsonify({"error": exc.message, **exc.body}).get_data())
        return resp

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        return _error(exc.code or 500, exc.description or exc.name)

    @app.errorhandler(Exception)
    def server_error(exc: Exception) -> Response:
        log.exception("unhandled error")
        return _error(500, "internal server error")
