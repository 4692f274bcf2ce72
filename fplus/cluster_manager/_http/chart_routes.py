"""``GET /v1/chart`` (the Helm chart templates, system charts marked) and ``DELETE
/v1/chart/<t>`` (refused while deployments use it) (:mod:`..services.charts`)."""

from __future__ import annotations

import base64
import binascii

from flask import Blueprint, Response, jsonify, request

from fplus.config_store.client import ConfigStoreClient

from ..services.charts import ChartService
from ..services.errors import Unauthorized
from .context import caller, services
from .params import only_query

bp = Blueprint("charts", __name__)


@bp.get("/v1/chart")
def list_charts() -> Response:
    caller()
    only_query()
    return jsonify({"charts": ChartService(services().cs).templates()})


@bp.delete("/v1/chart/<chart:chart>")
def delete_chart(chart: str) -> tuple[str, int]:
    caller()
    only_query()
    with _as_caller() as writer:
        ChartService(services().cs).delete(chart, writer)
    return "", 204


def _as_caller() -> ConfigStoreClient:
    """A Config Store client with the caller's own credentials (Basic or Bearer)."""
    scheme, _, value = (request.headers.get("Authorization") or "").partition(" ")
    url = services().cs.base_url
    if scheme.lower() == "bearer" and value:
        return ConfigStoreClient(url, token=value.strip(), retries=1)
    if scheme.lower() == "basic":
        try:
            user, _, password = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise Unauthorized("malformed Basic credentials") from None
        return ConfigStoreClient(url, user, password, retries=1)
    raise Unauthorized("valid credentials are required (HTTP Basic or a Config Store "
                       "Bearer token)")
