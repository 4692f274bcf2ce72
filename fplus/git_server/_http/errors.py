"""Refusals and failures as JSON ``{"error": message}`` answers."""

from __future__ import annotations

import logging

from flask import Flask, Response

from fplus.config_store.client import ConfigStoreError
from fplus.serving import install_json_errors, json_error

log = logging.getLogger(__name__)

CHALLENGE = 'Basic realm="Factory+"'


def register(app: Flask) -> None:
    """Install the error handlers: HTTP exceptions as JSON (a 401 with a Basic challenge),
    an unreachable Config Store as 503, anything else as a logged 500."""

    @app.errorhandler(ConfigStoreError)
    def config_store_error(exc: ConfigStoreError) -> Response:
        log.warning("Config Store request failed: %s", exc)
        return json_error(503, "the Config Store could not answer")

    install_json_errors(app, CHALLENGE)
