"""Admission control at the Config Store's door (:mod:`fplus.serving.http.admission`).

Two buckets, each answering past its rate with 503 and a jittered ``Retry-After`` before any
work that costs:

- **new sessions**: notify/v2 WebSocket handshakes (refused before the upgrade, so before
  the token is read and any subscription's first answer) and ``POST /token`` (before the
  password is checked and a token written). Checked first of all, ahead of authentication.
- **password checks**: a Basic login that must verify an argon2 hash (not a login
  remembered from the last minute, nor a generated secret's cheap hash), on any route.

Nothing else is ever refused here: ``/ping``, ``/metrics``, reads and writes, and the
sessions already open (their messages and updates) go on at full speed while a storm of
newcomers is held to the rate the server serves them at.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask, current_app, request

from fplus.serving.http.admission import Admission

from .._domain.common.errors import ServiceUnavailable

EXTENSION = "admission"
GATED_ENDPOINTS = frozenset({("notify.notify", "GET"), ("auth.token", "POST")})
"""``(endpoint, method)`` of the requests that open a session."""


@dataclass(frozen=True)
class AdmissionSettings:
    """Rates (a second; 0: no limit) and bursts of the two buckets."""

    session_rate: float = 200.0
    session_burst: int = 400
    password_rate: float = 0.0
    password_burst: int = 0


@dataclass(frozen=True)
class Gates:
    """The app's two buckets."""

    sessions: Admission
    passwords: Admission


def install_gate(app: Flask, settings: AdmissionSettings) -> None:
    """Gate ``app``'s new sessions and password checks by ``settings`` (the hook runs before
    every other ``before_request``: call this before registering them)."""
    app.extensions[EXTENSION] = Gates(
        Admission(settings.session_rate, settings.session_burst),
        Admission(settings.password_rate, settings.password_burst or
                  max(1, round(2 * settings.password_rate))))
    app.before_request(gate_new_sessions)


def gates() -> Gates:
    """The current app's buckets."""
    return current_app.extensions[EXTENSION]


def gate_new_sessions() -> None:
    """``before_request``: 503 for a new session past the rate, before anything is read."""
    if (request.endpoint, request.method) in GATED_ENDPOINTS:
        _take(gates().sessions, "new sessions")


def gate_password_check() -> None:
    """Before an argon2 password check: 503 past the rate."""
    _take(gates().passwords, "password logins")


def _take(bucket: Admission, what: str) -> None:
    wait = bucket.admit()
    if wait is not None:
        raise ServiceUnavailable(f"busy: admitting {what} at {bucket.rate:g} a second; "
                                 f"try again in {wait} s", retry_after=wait)
