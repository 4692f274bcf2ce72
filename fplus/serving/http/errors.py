"""JSON error answers ``{"error": message}`` shared by every service's Flask app."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

log = logging.getLogger(__name__)

# Headers an HTTPException carries that the JSON answer must keep (405 → Allow,
# 416 → Content-Range, 503 → Retry-After); content headers are the JSON answer's own.
_KEPT = frozenset({"allow", "content-range", "retry-after", "www-authenticate"})


def json_error(status: int, message: str, *, body: object = None,
               challenge: str | None = None,
               headers: Iterable[tuple[str, str]] = ()) -> Response:
    """A JSON answer; ``challenge`` becomes ``WWW-Authenticate`` on a 401."""
    resp = jsonify(body if body is not None else {"error": message})
    resp.status_code = status
    for name, value in headers:
        resp.headers[name] = value
    if status == 401 and challenge and "WWW-Authenticate" not in resp.headers:
        resp.headers["WWW-Authenticate"] = challenge
    return resp


def http_exception_error(exc: HTTPException, *, challenge: str | None = None) -> Response:
    """An :class:`HTTPException` as JSON, keeping headers such as ``Allow`` on a 405."""
    kept = [(k, v) for k, v in exc.get_headers() if k.lower() in _KEPT]
    return json_error(exc.code or 500, exc.description or exc.name, challenge=challenge,
                      headers=kept)


def install_json_errors(app: Flask, challenge: str,
                        on_unhandled: Callable[[], None] | None = None) -> None:
    """HTTP exceptions as JSON (headers kept), and any other exception as a logged 500;
    ``on_unhandled`` runs for each of those (e.g. to count it)."""

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        return http_exception_error(exc, challenge=challenge)

    @app.errorhandler(Exception)
    def server_error(exc: Exception) -> Response:
        log.exception("unhandled error")
        if on_unhandled is not None:
            on_unhandled()
        return json_error(500, "internal server error")
