"""CORS for browser apps served from other origins (``--cors-origin``, repeatable).

Browsers let a page on another origin call a service only when the service says so. Every
service takes the origins it trusts; for those, answers carry ``Access-Control-Allow-Origin``
naming the origin and ``Access-Control-Allow-Credentials: true`` (cookies and
``Authorization`` may be sent), and expose the headers clients read (``ETag``, ``Location``,
``Warning``, ``Retry-After``). Any other origin gets no CORS header at all, so the browser
keeps the answer from the page. Preflights (``OPTIONS`` with
``Access-Control-Request-Method``) are answered before authentication, as a browser sends
them without credentials. The headers themselves come from flask-cors; origins are exact
``scheme://host[:port]`` strings (never patterns), checked at start, and handed to flask-cors
as anchored patterns of their escaped text: given as strings it takes any holding ``[``,
``]`` or ``*`` for a regex, so ``http://[::1]:5173`` would match ``http://1:5173`` and never
itself.
"""

from __future__ import annotations

import argparse
import os
import re

from flask import Flask, Response, request
from flask_cors import CORS

ENV = "FPLUS_CORS_ORIGINS"
"""Space-separated origins, the default of ``--cors-origin``."""
EXPOSED = ["ETag", "Location", "Warning", "Retry-After"]
_ORIGIN = re.compile(r"^https?://(?:[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\])"
                     r"(?::[0-9]{1,5})?(?!\n)$")


def parse_origin(text: str) -> str:
    """An origin as browsers send it (``http(s)://host[:port]``, lower-cased); anything else
    (a path, a wildcard, a pattern) is refused."""
    origin = text.strip().lower()
    if not _ORIGIN.match(origin):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an origin: give scheme://host[:port], e.g. "
            "https://admin.example.com (no path, no wildcard)")
    return origin


def add_cors_options(parser: argparse.ArgumentParser) -> None:
    """``--cors-origin ORIGIN`` (repeatable; default ``$FPLUS_CORS_ORIGINS``, else none)."""
    parser.add_argument(
        "--cors-origin", dest="cors_origins", action="append", type=parse_origin,
        metavar="ORIGIN",
        help=f"let browser apps on ORIGIN call this service with credentials (repeatable; "
             f"default ${ENV}, space-separated, else no origin)")


def cors_origins(args: argparse.Namespace) -> list[str]:
    """The origins ``args`` name, else those of ``$FPLUS_CORS_ORIGINS``; SystemExit with one
    line if the environment names something that is not an origin."""
    if args.cors_origins:
        return list(dict.fromkeys(args.cors_origins))
    try:
        return list(dict.fromkeys(parse_origin(o) for o in os.environ.get(ENV, "").split()))
    except argparse.ArgumentTypeError as exc:
        raise SystemExit(f"{ENV}: {exc}") from None


def enable_cors(app: Flask, origins: list[str]) -> None:
    """Answer CORS for ``origins`` on every route of ``app`` (nothing for an empty list)."""
    if not origins:
        return
    CORS(app, origins=[exactly(origin) for origin in origins], supports_credentials=True,
         always_send=False, expose_headers=EXPOSED, max_age=600, vary_header=True)
    app.before_request_funcs.setdefault(None, []).insert(0, _answer_preflight)
    app.after_request(_vary_by_origin)


def exactly(origin: str) -> re.Pattern[str]:
    """A pattern that matches ``origin`` and nothing else (case-insensitive, as origins are)."""
    return re.compile(re.escape(origin) + r"\Z", re.IGNORECASE)


def _answer_preflight() -> Response | None:
    """A preflight never reaches authentication (flask-cors adds its headers afterwards)."""
    if request.method == "OPTIONS" and request.headers.get("Access-Control-Request-Method"):
        return Response(status=204)
    return None


def _vary_by_origin(response: Response) -> Response:
    """Answers differ by ``Origin`` (flask-cors says so only for several origins), so caches
    must keep them apart."""
    response.vary.add("Origin")
    return response
