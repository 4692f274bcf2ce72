"""``/v2/app`` routes: config entries with ETags, merge-patch and schemas."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from fplus.jsontypes import JsonValue

from .. import uuids
from .._domain.common.errors import Forbidden, NotFound
from .._domain.configdb import configs, etags, scopes
from .auth import allowed, caller, require, store
from .params import json_body, lower_uuid_fields

bp = Blueprint("apps", __name__)
P = uuids.ConfigDBPerm


def _value(app: str, value: JsonValue) -> JsonValue:
    """An entry body; a Registration entry's UUIDs are lower-cased (they name objects)."""
    if app == uuids.App.Registration:
        return lower_uuid_fields(value, ("uuid", "owner", "class"))
    return value


def _written(created: bool, etag: str) -> tuple[str, int, dict[str, str]]:
    return "", 201 if created else 204, {"ETag": etags.quote(etag)}


@bp.get("/v2/app/<uuid:app>/object")
def app_objects(app: str) -> Response:
    require(P.ReadApp, app)
    return jsonify(configs.app_objects(store().core, app))


@bp.get("/v2/app/<uuid:app>/class/<uuid:klass>")
def app_class(app: str, klass: str) -> Response:
    require(P.ReadApp, app)
    return jsonify(configs.app_class_objects(store().core, app, klass))


@bp.get("/v2/app/<uuid:app>/object/<uuid:obj>")
def get_entry(app: str, obj: str) -> Response | tuple[str, int, dict[str, str]]:
    """GET/HEAD an entry. A failed If-None-Match is 304; a failed If-Match is 412
    (ACS answers 304 for both; we fix that)."""
    found = _readable(app, obj)
    etag = found[1] if found else None
    try:
        etags.check(request.headers.get("If-Match"), request.headers.get("If-None-Match"), etag)
    except etags.NotModified:
        return "", 304, {"ETag": etags.quote(etag)} if etag else {}
    if found is None:
        raise NotFound("no such entry")
    resp = jsonify(found[0])
    resp.headers["ETag"] = etags.quote(found[1])
    return resp


def _readable(app: str, obj: str) -> tuple[object, str] | None:
    """The entry (None: absent) if the caller may read it: by a grant on the app or for the
    entry's object, or for the object the entry belongs to (:mod:`scopes`; then an absent
    entry is refused too, so refusals say nothing of which entries exist)."""
    core = store().core
    if allowed(P.ReadApp, app, obj=obj):
        return configs.get(core, app, obj)
    if scopes.scoped(app) and scopes.may_search(core.acl, caller(), app):
        found = configs.get(core, app, obj)
        if found is not None and scopes.may_read(core.acl, caller(), app, obj, found[0]):
            return found
    raise Forbidden(scopes.refusal(app, obj))


@bp.put("/v2/app/<uuid:app>/object/<uuid:obj>")
def put_entry(app: str, obj: str) -> tuple[str, int, dict[str, str]]:
    require(P.WriteApp, app, obj=obj)
    value = _value(app, json_body())
    created, etag = configs.put(
        store().core, store().schemas, caller(), app, obj, value,
        if_match=request.headers.get("If-Match"),
        if_none_match=request.headers.get("If-None-Match"))
    return _written(created, etag)


@bp.patch("/v2/app/<uuid:app>/object/<uuid:obj>")
def patch_entry(app: str, obj: str) -> tuple[str, int, dict[str, str]]:
    require(P.ReadApp, app, obj=obj)
    require(P.WriteApp, app, obj=obj)
    patch = _value(app, json_body(merge_patch=True))
    _, etag = configs.patch(store().core, store().schemas, caller(), app, obj, patch,
                            if_match=request.headers.get("If-Match"))
    return _written(False, etag)


@bp.delete("/v2/app/<uuid:app>/object/<uuid:obj>")
def delete_entry(app: str, obj: str) -> tuple[str, int]:
    require(P.WriteApp, app, obj=obj)
    configs.delete(store().core, app, obj, if_match=request.headers.get("If-Match"))
    return "", 204
