"""``GET /v1/chart`` (the Helm chart templates, system charts marked), ``DELETE
/v1/chart/<t>`` (refused while deployments use it)
(:mod:`..services.charts.chart_templates`), and the imports into the central repos
(:mod:`..services.charts.central_imports`): ``POST /v1/chart`` (a chart archive),
``POST /v1/flux-version`` (a `flux install --export`) and ``GET /v1/flux-version``."""

from __future__ import annotations

import base64
import binascii

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import UnsupportedMediaType

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.serving.http.limits import body_limit

from ..formats import flux_export, helm_chart
from ..services.charts.central_imports import ImportService
from ..services.charts.chart_templates import ChartService
from ..services.errors import BadRequest, NotFound, Unauthorized
from .context import caller, require, services
from .params import only_query

ARCHIVE_TYPES = ("application/gzip", "application/x-gzip", "application/octet-stream",
                 "application/x-tar", "application/x-compressed-tar")
EXPORT_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml",
                "text/plain", "application/octet-stream")

bp = Blueprint("charts", __name__)


@bp.get("/v1/chart")
def list_charts() -> Response:
    caller()
    only_query("imported")
    imported = request.args.get("imported", "false")
    if imported not in ("true", "false"):
        raise BadRequest("imported must be true or false")
    listing: dict[str, object] = {"charts": ChartService(services().cs).templates()}
    if imported == "true":
        listing["imported"] = _imports().charts()
    return jsonify(listing)


@bp.delete("/v1/chart/<chart:chart>")
def delete_chart(chart: str) -> tuple[str, int]:
    caller()
    only_query()
    with _as_caller() as writer:
        ChartService(services().cs).delete(chart, writer)
    return "", 204


@bp.post("/v1/chart")
@body_limit(helm_chart.MAX_BYTES)
def import_chart() -> tuple[Response, int]:
    require(uuids.EdgePerm.Imports, uuids.NULL)
    only_query("template")
    body = _body(ARCHIVE_TYPES, "a chart archive (.tgz, as `helm package` makes it)")
    template = request.args.get("template")
    if template is None:
        done = _imports().import_chart(body)
    else:
        with _as_caller() as writer:
            done = _imports().import_chart(body, template, writer)
    return jsonify(done), 201 if done["changed"] or "template" in done else 200


@bp.get("/v1/flux-version")
def list_flux_versions() -> Response:
    caller()
    only_query()
    return jsonify({"versions": _imports().flux_versions()})


@bp.post("/v1/flux-version")
@body_limit(flux_export.MAX_BYTES)
def import_flux() -> tuple[Response, int]:
    require(uuids.EdgePerm.Imports, uuids.NULL)
    only_query()
    body = _body(EXPORT_TYPES, "a `flux install --export` (YAML)")
    done = _imports().import_flux(body)
    return jsonify(done), 201 if done["changed"] else 200


def _imports() -> ImportService:
    found = services().imports
    if found is None:
        raise NotFound("imports are not served here")
    return found


def _body(types: tuple[str, ...], what: str) -> bytes:
    """The request body, if its Content-Type is one of ``types``; else 415."""
    if request.mimetype not in types:
        raise UnsupportedMediaType(f"the body must be {what}, as {' or '.join(types[:2])}, "
                                   f"not {request.mimetype or 'untyped'}")
    return request.get_data(cache=False)


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
