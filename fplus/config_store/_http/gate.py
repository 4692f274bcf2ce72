"""Admission control at the Config Store's door (:mod:`fplus.serving.http.admission`).

Two buckets, each answering past its rate with 503 and a jittered ``Retry-After`` before any
work that costs:

- **new sessions**: notify/v2 WebSocket handshakes (refused before the upgrade, so before
  the token is read and any subscription's first answer) and ``POST /token`` (before the
  password is checked and a token written). Checked in front of the app (:func:`door`),
  from the request line alone: a refusal costs no routing, no request context and no hook,
  so a replica started under a fleet works through the storm of handshakes waiting for it
  fast, and ``/ping`` and the sessions it admitted are not kept waiting behind it.
- **password checks**: a Basic login that must verify an argon2 hash (not a login
  remembered from the last minute, nor a generated secret's cheap hash), on any route.

Nothing else is ever refused here: ``/ping``, ``/metrics``, reads and writes, and the
sessions already open (their messages and updates) go on at full speed while a storm of
newcomers is held to the rate the server serves them at.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flask import Flask, current_app

from fplus.serving.http.admission import Admission
from fplus.serving.http.metrics import HttpMetrics

from .._domain.common.errors import ServiceUnavailable

EXTENSION = "admission"
GATED = {("/notify/v2", "GET"): "/notify/v2", ("/token", "POST"): "/token"}
"""``(path, method)`` of the requests that open a session, and their routes (the URL rules
their refusals are counted under)."""

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment


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
    """Gate ``app``'s new sessions and password checks by ``settings``: call it last, once
    ``app`` counts its requests (:class:`HttpMetrics`), as it wraps ``app.wsgi_app``."""
    app.extensions[EXTENSION] = found = Gates(
        Admission(settings.session_rate, settings.session_burst),
        Admission(settings.password_rate, settings.password_burst or
                  max(1, round(2 * settings.password_rate))))
    app.wsgi_app = door(app.wsgi_app, found.sessions,  # type: ignore[assignment,method-assign]
                        app.extensions["http_metrics"])


def gates() -> Gates:
    """The current app's buckets."""
    return current_app.extensions[EXTENSION]


def door(inner: WSGIApplication, sessions: Admission,
         metrics: HttpMetrics) -> WSGIApplication:
    """``inner`` behind the new-sessions bucket: a request opening a session past the rate
    is answered 503 from its path and method alone (counted in ``metrics`` under its route,
    as the app counts the requests it answers)."""
    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        route = GATED.get((environ.get("PATH_INFO", "").rstrip("/"),
                           environ.get("REQUEST_METHOD", "")))
        if route is None or not sessions.limited:
            return inner(environ, start_response)
        started = time.perf_counter()
        wait = sessions.admit()
        if wait is None:
            return inner(environ, start_response)
        body = json.dumps({"error": _busy(sessions, "new sessions", wait)}).encode()
        start_response("503 SERVICE UNAVAILABLE", [
            ("Content-Type", "application/json"), ("Content-Length", str(len(body))),
            ("Retry-After", str(wait))])
        metrics.requests.labels(route, environ["REQUEST_METHOD"], "503").inc()
        metrics.latency.labels(route).observe(time.perf_counter() - started)
        return [body]
    return app


def gate_password_check() -> None:
    """Before an argon2 password check: 503 past the rate."""
    _take(gates().passwords, "password logins")


def _busy(bucket: Admission, what: str, wait: int) -> str:
    return f"busy: admitting {what} at {bucket.rate:g} a second; try again in {wait} s"


def _take(bucket: Admission, what: str) -> None:
    wait = bucket.admit()
    if wait is not None:
        raise ServiceUnavailable(_busy(bucket, what, wait), retry_after=wait)
