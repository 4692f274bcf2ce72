"""Turning domain errors and HTTP exceptions into JSON responses."""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from serving import http_exception_error, json_error

from .._domain.errors import DomainError

log = logging.getLogger(__name__)


CHALLENGE = 'Basic realm="Factory+"'


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
        return resp

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        return http_exception_error(exc, challenge=CHALLENGE)

    @app.errorhandler(Exception)
    def server_error(exc: Exception) -> Response:
        log.exception("unhandled error")
        return _error(500, "internal server error")
