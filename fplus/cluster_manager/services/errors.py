"""Refusals of the Cluster Manager's API operations; each carries the HTTP status to answer.

The domain raises these; the HTTP layer turns them into ``{"error": message}`` answers.
Messages are safe to show: they never contain secrets or tokens.
"""

from __future__ import annotations

from fplus.serving.http.httperror import HttpError


class ApiError(HttpError):
    """A refused request (``retry_after``: seconds to answer in Retry-After)."""


class BadRequest(ApiError):
    status = 400


class Unauthorized(ApiError):
    status = 401


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class PreconditionFailed(ApiError):
    """An ``If-Match`` that names a version other than the current one."""

    status = 412


class Gone(ApiError):
    status = 410


class TooLarge(ApiError):
    status = 413


class Unprocessable(ApiError):
    status = 422


class TooMany(ApiError):
    """A per-principal quota is used up."""

    status = 429


class BadGateway(ApiError):
    """Something the Config Store holds for us cannot be used (not the caller's fault)."""

    status = 502


class Unavailable(ApiError):
    status = 503
