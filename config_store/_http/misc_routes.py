"""Service routes: ping, the OpenAPI document, dump loading, and the refused save."""

from __future__ import annotations

from importlib import resources

from flask import Blueprint, Response, current_app, jsonify

from .. import uuids
from .._domain import dump
from .._domain.errors import Forbidden, NotFound
from .auth import allowed, caller, store
from .params import json_body

bp = Blueprint("misc", __name__)
VERSION = "2.0.0"
_LOAD_PERMS = (
    uuids.ConfigDBPerm.CreateSpecificObj, uuids.ConfigDBPerm.WriteMembers,
    uuids.ConfigDBPerm.WriteMemberships, uuids.ConfigDBPerm.WriteSubclasses,
    uuids.ConfigDBPerm.WriteSuperclasses, uuids.ConfigDBPerm.TakeFrom,
    uuids.ConfigDBPerm.WriteApp,
)


@bp.get("/ping")
def ping() -> Response:
    return jsonify({
        "version": VERSION, "service": uuids.Service.ConfigDB,
        "device": current_app.config.get("DEVICE_UUID"),
        "software": {"vendor": "fplus-edge-manager", "application": "config-store",
                     "revision": VERSION},
    })


@bp.get("/openapi.yaml")
def openapi() -> Response:
    doc = resources.files("spec").joinpath("config-store.yaml")
    if not doc.is_file():
        raise NotFound("no OpenAPI document installed")
    return Response(doc.read_text(), mimetype="application/yaml")


@bp.post("/load")
def load() -> tuple[str, int]:
    """Load a v2 dump; needs every object-model permission as explicit wildcard grants."""
    if not all(allowed(p, uuids.NULL, wild=False) for p in _LOAD_PERMS):
        raise Forbidden("loading dumps needs wildcard object-model grants")
    dump.load(store().core, store().schemas, caller(), json_body())
    return "", 204


@bp.get("/v2/save")
@bp.get("/v1/save")
def save() -> None:
    raise Forbidden("dumps cannot be saved")
