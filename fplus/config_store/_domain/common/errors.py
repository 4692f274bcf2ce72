"""Domain errors: each carries the HTTP status the routes answer with."""

from __future__ import annotations

from fplus.serving.http.httperror import HttpError


class DomainError(HttpError):
    """A refused request; ``status`` is the HTTP status, ``body`` an optional JSON body."""


class BadRequest(DomainError):
    status = 400


class Unauthorized(DomainError):
    status = 401


class Forbidden(DomainError):
    status = 403


class NotFound(DomainError):
    status = 404


class MethodNotAllowed(DomainError):
    status = 405


class Conflict(DomainError):
    status = 409


class Gone(DomainError):
    status = 410


class PreconditionFailed(DomainError):
    status = 412


class UnsupportedMediaType(DomainError):
    status = 415


class Unprocessable(DomainError):
    status = 422


class ServiceUnavailable(DomainError):
    """Refused for now (admission control): try again after ``retry_after`` seconds."""

    status = 503
