"""Service routes: ping, the OpenAPI document, dump loading and export, and the refused save."""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from flask import Blueprint, Response, current_app, jsonify, request

from fplus.jsontypes import JsonValue
from fplus.serving.http.openapi import document as openapi_document

from .. import uuids
from .._domain.auth import dump as auth_dump
from .._domain.common.errors import Forbidden, NotFound, Unprocessable
from .._domain.configdb import dump
from .auth import allowed, caller, store
from .params import json_body, lower_uuid_fields, lower_uuid_text

bp = Blueprint("misc", __name__)
VERSION = "2.0.0"
_LOAD_PERMS = (
    uuids.ConfigDBPerm.CreateSpecificObj, uuids.ConfigDBPerm.WriteMembers,
    uuids.ConfigDBPerm.WriteMemberships, uuids.ConfigDBPerm.WriteSubclasses,
    uuids.ConfigDBPerm.WriteSuperclasses, uuids.ConfigDBPerm.TakeFrom,
    uuids.ConfigDBPerm.WriteApp,
)
_EXPORTS = {  # ?service= -> (the permissions it needs as explicit wildcard grants, export)
    "configdb": ((uuids.ConfigDBPerm.ListObj, uuids.ConfigDBPerm.ReadMembers,
                  uuids.ConfigDBPerm.ReadSubclasses, uuids.ConfigDBPerm.ReadApp),
                 lambda: dump.export(store().core, frozenset({store().root}))),
    "auth": ((uuids.AuthPerm.ReadACL, uuids.AuthPerm.ReadKerberos, uuids.AuthPerm.WriteKerberos),
             lambda: auth_dump.export(store().core)),
}


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
    doc = openapi_document("config-store.yaml", request.host_url)
    if doc is None:
        raise NotFound("no OpenAPI document installed")
    return Response(doc, mimetype="application/yaml")


@bp.post("/load")
def load() -> tuple[str, int]:
    """Load a v2 dump: an Auth dump (identities and grants) by :mod:`.._domain.auth.dump`'s
    rules; a ConfigDB one needs every object-model permission as explicit wildcard grants."""
    body = json_body()
    if auth_dump.is_auth_dump(body):
        auth_dump.load(store().core, caller(), body)
        return "", 204
    if not all(allowed(p, uuids.NULL, wild=False) for p in _LOAD_PERMS):
        raise Forbidden("loading dumps needs wildcard object-model grants")
    dump.load(store().core, store().schemas, caller(), _lower_dump_uuids(body))
    return "", 204


@bp.get("/v2/dump")
def export() -> Response:
    """The whole ConfigDB (``?service=configdb``) or Auth (``?service=auth``) as the dump
    ``POST /load`` takes; reading everything needs explicit wildcard grants (403)."""
    which = request.args.get("service", "")
    if which not in _EXPORTS:
        raise Unprocessable("service must be configdb or auth")
    perms, make = _EXPORTS[which]
    if not all(allowed(p, uuids.NULL, wild=False) for p in perms):
        raise Forbidden(f"exporting the {which} dump needs wildcard read grants")
    return jsonify(make())


@bp.post("/v1/load")
def load_v1() -> NoReturn:
    """Upstream's v1 loader (acs-configdb lib/api-v1.js ``dump_load``): anything but a
    version 1 dump is 422 before permissions; a v1 dump needs /load's permissions (403),
    and since only v2 dumps load here, it is then 422 saying so."""
    body = json_body()
    if not isinstance(body, dict) or body.get("version") != 1:
        raise Unprocessable("/v1/load loads only version 1 dumps; POST version 2 dumps to /load")
    if not all(allowed(p, uuids.NULL, wild=False) for p in _LOAD_PERMS):
        raise Forbidden("loading dumps needs wildcard object-model grants")
    raise Unprocessable("version 1 dumps are not supported: convert it to version 2 and POST "
                        "it to /load")


def _lower_dump_uuids(body: JsonValue) -> JsonValue:
    """A dump with its class, object and app UUIDs lower-cased (entry values untouched)."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    objs, configs = body.get("objects"), body.get("configs")
    if isinstance(objs, dict):
        out["objects"] = {lower_uuid_text(k): _lower_keys(v, _lower_spec)
                          for k, v in objs.items()}
    if isinstance(configs, dict):
        out["configs"] = {lower_uuid_text(k): _lower_keys(v) for k, v in configs.items()}
    return out


def _lower_spec(spec: JsonValue) -> JsonValue:
    return lower_uuid_fields(spec, ("memberOf", "subclassOf", "enum", "powersetOf"))


def _lower_keys(value: JsonValue,
                inner: Callable[[JsonValue], JsonValue] | None = None) -> JsonValue:
    if not isinstance(value, dict):
        return value
    return {lower_uuid_text(k): inner(v) if inner else v for k, v in value.items()}


@bp.get("/v2/save")
@bp.get("/v1/save")
def save() -> NoReturn:
    raise Forbidden("dumps cannot be saved")
