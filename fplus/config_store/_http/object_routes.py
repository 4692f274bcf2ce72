"""``/v2/object`` and ``/v2/class`` routes: objects and class relations."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from fplus.jsontypes import JsonValue

from .. import uuids
from .._domain.common.errors import NotFound, Unprocessable
from .._domain.configdb import objects
from ..uuids import is_uuid
from .auth import caller, require, store
from .params import json_body, lower_uuid_fields

bp = Blueprint("objects", __name__)
P = uuids.ConfigDBPerm


@bp.get("/v2/object")
def list_objects() -> Response:
    require(P.ListObj, uuids.NULL)
    return jsonify(sorted(store().core.graph.objects))


@bp.get("/v2/object/rank")
def rank_roots() -> Response:
    require(P.ListObj, uuids.NULL)
    return jsonify(objects.rank_roots())


def _optional_uuid(body: dict[str, JsonValue], field: str) -> str | None:
    value = body.get(field)
    if value is not None and not is_uuid(value):
        raise Unprocessable(f"{field} must be a UUID")
    return value


@bp.post("/v2/object")
def create_object() -> tuple[Response, int]:
    body = lower_uuid_fields(json_body(), ("class", "uuid", "owner"))
    klass = body.get("class") if isinstance(body, dict) else None
    if not isinstance(body, dict) or not isinstance(klass, str) or "rank" in body:
        raise Unprocessable('body must be {"class": uuid, "uuid"?: uuid, "owner"?: uuid}')
    if not is_uuid(klass):
        raise Unprocessable("class must be a UUID")
    uuid, owner = (_optional_uuid(body, field) for field in ("uuid", "owner"))
    require(P.CreateSpecificObj if uuid else P.CreateObj, klass)
    obj, created = objects.create(store().core, caller(), klass, uuid, owner)
    return jsonify(obj.registration()), 201 if created else 200


@bp.get("/v2/object/<uuid:obj>")
def get_object(obj: str) -> Response:
    """An object's Registration (as ``GET /v2/app/<Registration>/object/<obj>``)."""
    require(P.ReadApp, uuids.App.Registration, obj=obj)
    return jsonify(objects.require(store().core, obj).registration())


@bp.delete("/v2/object/<uuid:obj>")
def delete_object(obj: str) -> tuple[str, int]:
    require(P.DeleteObj, obj)
    objects.delete(store().core, obj)
    return "", 204


@bp.get("/v2/class")
def list_classes() -> Response:
    return class_relation(uuids.Class.R1Class, "member")


@bp.get("/v2/app")
def list_apps() -> Response:
    return class_relation(uuids.Class.App, "member")


@bp.get("/v2/class/<uuid:klass>")
def class_summary(klass: str) -> Response:
    require(P.ReadMembers, klass)
    require(P.ReadSubclasses, klass)
    core = store().core
    return jsonify({"members": objects.class_view(core, klass, "member", False),
                    "subclasses": objects.class_view(core, klass, "subclass", False)})


_READ = {"member": P.ReadMembers, "subclass": P.ReadSubclasses}
_WRITE = {"member": (P.WriteMembers, P.WriteMemberships),
          "subclass": (P.WriteSubclasses, P.WriteSuperclasses)}


@bp.get("/v2/class/<uuid:klass>/<any(member, subclass):rel>")
def class_relation(klass: str, rel: str) -> Response:
    require(_READ[rel], klass)
    return jsonify(objects.class_view(store().core, klass, rel, direct=False))


@bp.get("/v2/class/<uuid:klass>/<any(member, subclass):rel>/<uuid:obj>")
def class_relation_one(klass: str, rel: str, obj: str) -> tuple[str, int]:
    require(_READ[rel], klass)
    if obj not in objects.class_view(store().core, klass, rel, direct=False):
        raise NotFound(f"{obj} is not a {rel} of {klass}")
    return "", 204


@bp.get("/v2/class/<uuid:klass>/direct/<any(member, subclass):rel>")
def direct_relation(klass: str, rel: str) -> Response:
    require(_WRITE[rel][0], klass)
    return jsonify(objects.class_view(store().core, klass, rel, direct=True))


@bp.get("/v2/class/<uuid:klass>/direct/<any(member, subclass):rel>/<uuid:obj>")
def direct_relation_one(klass: str, rel: str, obj: str) -> tuple[str, int]:
    require(_WRITE[rel][0], klass)
    if obj not in objects.class_view(store().core, klass, rel, direct=True):
        raise NotFound(f"{obj} is not a direct {rel} of {klass}")
    return "", 204


@bp.route("/v2/class/<uuid:klass>/direct/<any(member, subclass):rel>/<uuid:obj>",
          methods=["PUT", "DELETE"])
def write_relation(klass: str, rel: str, obj: str) -> tuple[str, int]:
    from flask import request

    class_perm, object_perm = _WRITE[rel]
    require(class_perm, klass)
    require(object_perm, obj)
    setter = objects.set_member if rel == "member" else objects.set_subclass
    setter(store().core, klass, obj, request.method == "PUT")
    return "", 204
