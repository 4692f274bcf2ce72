"""``/v1/maintenance-window[/<window>]``: create or replace, list, read and delete maintenance
windows (:mod:`..rollouts.window_service`).

A window holds back changes to any cluster, so changing one takes the wildcard grant of the
cluster permission (as a fleet deployment does); reading takes that, or read access to the
Maintenance window app in the Config Store.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request, url_for

from fplus.config_store import uuids
from fplus.config_store.client import Caller
from fplus.serving import JSONRejected, loads_checked

from ..rollouts.window_service import WINDOW_APP, WindowService
from ..services.errors import BadRequest
from .context import caller, require, require_fleetwide_read, services
from .params import only_query

bp = Blueprint("windows", __name__)
SHAPE = ("the body must be a JSON object {selector: {matchLabels?, matchExpressions?}, "
         "schedule: \"<cron>\", duration: seconds | \"4h\", timeZone?: \"<IANA name>\"}")


def require_window_read(who: Caller) -> Caller:
    """``who`` if it may read maintenance windows (the console checks the same); else 403."""
    return require_fleetwide_read(who, WINDOW_APP, "Maintenance window")


def window_service() -> WindowService:
    """The maintenance windows of the app's Config Store."""
    return WindowService(services().cs)


def _change() -> Caller:
    return require(uuids.EdgePerm.Clusters, uuids.NULL)


def _body() -> object:
    if request.mimetype != "application/json":
        raise BadRequest(f"{SHAPE}, sent as Content-Type: application/json")
    try:
        return loads_checked(request.get_data(cache=False))
    except JSONRejected as exc:
        raise BadRequest(f"{SHAPE}: {exc}") from None


@bp.put("/v1/maintenance-window/<window>")
def put_window(window: str) -> tuple[Response, int]:
    _change()
    only_query()
    view, created = window_service().put(window, _body())
    resp = jsonify(view)
    if created:
        resp.headers["Location"] = url_for("windows.get_window", window=window)
    return resp, 201 if created else 200


@bp.get("/v1/maintenance-window")
def list_windows() -> Response:
    require_window_read(caller())
    only_query()
    return jsonify({"maintenanceWindows": window_service().list()})


@bp.get("/v1/maintenance-window/<window>")
def get_window(window: str) -> Response:
    require_window_read(caller())
    only_query()
    return jsonify(window_service().get(window))


@bp.delete("/v1/maintenance-window/<window>")
def delete_window(window: str) -> Response:
    _change()
    only_query()
    uuid = window_service().delete(window)
    return jsonify({"uuid": uuid, "name": window, "deleted": True})
