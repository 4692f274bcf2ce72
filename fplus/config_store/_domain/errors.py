"""Domain errors: each carries the HTTP status the routes answer with."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """A refused request; ``status`` is the HTTP status, ``body`` an optional JSON body."""

    status = 500

    def __init__(self, message: str = "", body: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.body = body


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
