"""Errors raised by the Config Store client: one class per HTTP status that matters."""

from __future__ import annotations

from fplus.jsontypes import JsonValue


class ConfigStoreError(Exception):
    """A request the Config Store refused or could not answer.

    ``status`` is the HTTP status (0 when no HTTP answer arrived at all) and ``body``
    the parsed response body (JSON if parseable, else text, else None).
    """

    status: int = 0
    index: int | None = None
    """In a failed batch (:meth:`ConfigStoreClient.batch`), the operation that failed."""
    retry_after: float | None = None
    """Seconds the server asked to wait before trying again (its ``Retry-After``), if it
    did: a busy Config Store's 503 says when to come back."""

    def __init__(
        self, status: int | None = None, body: JsonValue = None, message: str | None = None
    ) -> None:
        if status is not None:
            self.status = status
        self.body = body
        super().__init__(message or f"Config Store answered {self.status}: {_brief(body)}")


class ConnectionFailed(ConfigStoreError):
    """No HTTP answer (connection refused, reset or timed out) after every retry."""

    status = 0


class BadRequest(ConfigStoreError):
    status = 400


class Unauthorized(ConfigStoreError):
    status = 401


class Forbidden(ConfigStoreError):
    status = 403


class NotFound(ConfigStoreError):
    status = 404


class MethodNotAllowed(ConfigStoreError):
    status = 405


class Conflict(ConfigStoreError):
    status = 409


class Gone(ConfigStoreError):
    status = 410


class PreconditionFailed(ConfigStoreError):
    status = 412


class UnsupportedMediaType(ConfigStoreError):
    status = 415


class Unprocessable(ConfigStoreError):
    status = 422


class ServerError(ConfigStoreError):
    """Any 5xx answer (still failing after every retry)."""

    status = 500


_BY_STATUS: dict[int, type[ConfigStoreError]] = {
    cls.status: cls
    for cls in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        Conflict,
        Gone,
        PreconditionFailed,
        UnsupportedMediaType,
        Unprocessable,
    )
}


def error_for(status: int, body: JsonValue = None, context: str = "",
              retry_after: float | None = None) -> ConfigStoreError:
    """Build the exception matching ``status``; ``context`` (e.g. ``"GET /v2/..."``) prefixes
    it; ``retry_after``: the seconds the server asked to wait."""
    if status >= 500:
        cls: type[ConfigStoreError] = ServerError
    else:
        cls = _BY_STATUS.get(status, ConfigStoreError)
    prefix = f"{context}: " if context else ""
    error = cls(status, body, f"{prefix}{status} {_brief(body)}".rstrip())
    error.retry_after = retry_after
    return error


def _brief(body: JsonValue, limit: int = 200) -> str:
    """A short one-line rendering of a response body for messages."""
    if body is None:
        return ""
    text = body if isinstance(body, str) else repr(body)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
