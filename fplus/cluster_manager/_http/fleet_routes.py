"""``/v1/fleet-deployment[/<d>]``: create, list, read (with the roll-up), merge-patch and
delete fleet deployments (ours; :mod:`..rollouts.fleet_service`); ``/v1/rollout/<r>``
(``r``: the fleet deployment's uuid, or a cluster rollout's) and its ``pause``, ``resume``
``abort``, ``rollback`` and ``start-now`` (:mod:`..rollouts.service`), and ``promote``
(written as the caller);
``POST /v1/rollout`` creates a cluster rollout
(:mod:`..rollouts.cluster_service`; a template's also takes write access to the Flux
template app) and ``GET /v1/rollout`` lists the rollouts of both kinds.

A fleet deployment reaches any cluster, so changing one takes the wildcard grant of the
cluster permission (as creating a cluster does); reading takes that, or read access to the
Fleet deployment app in the Config Store.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Mapping

from flask import Blueprint, Response, jsonify, request, url_for

from fplus.config_store import uuids
from fplus.config_store.client import Caller
from fplus.config_store.client import Forbidden as StoreForbidden
from fplus.config_store.client import Unauthorized as StoreUnauthorized
from fplus.config_store.uuids import is_uuid
from fplus.serving import JSONRejected, loads_checked

from ..rollouts.cluster_service import ClusterRolloutService
from ..rollouts.fleet_entry import FLEET_APP
from ..rollouts.fleet_service import FleetService
from ..rollouts.service import RolloutService
from ..services.errors import BadRequest, Forbidden, Unauthorized, Unprocessable
from .context import acting, caller, require, require_fleetwide_read, services
from .params import only_query

bp = Blueprint("fleet", __name__)
SHAPE = ("the body must be a JSON object {name, chart, values?, selector?: {matchLabels?, "
         "matchExpressions?}, clusters?: [uuid], overrides?: {<cluster uuid>: values}}")
DRY_RUN = "dryRun"
START_NOW_SHAPE = ("the body must be a JSON object {clusters: [cluster uuid, ...]} (1 to "
                   "1000 of the rollout's clusters)")
MAX_START_NOW = 1000
ROLLOUT_SHAPE = ("the body must be a JSON object {name, change: {fluxVersion} | {fluxTemplate}, "
                 "selector?, clusters?: [uuid], rollout?: {maxUnavailable?, steps?}}")


def _change() -> Caller:
    return require(uuids.EdgePerm.Clusters, uuids.NULL)


def require_fleet_read(who: Caller) -> Caller:
    """``who`` if it may read fleet deployments (the console checks the same); else 403."""
    return require_fleetwide_read(who, FLEET_APP, "Fleet deployment")


def fleet_service() -> FleetService:
    """The fleet deployment service; 400 where fleet deployments are not served."""
    fleet = services().fleet
    if fleet is None:
        raise BadRequest("fleet deployments are not served here")
    return fleet


def _dry_run() -> bool:
    """``?dryRun`` (or ``=true``): answer what the change would do, write nothing."""
    value = request.args.get(DRY_RUN)
    if value is None or value.lower() in ("false", "0", "no"):
        return False
    if value.lower() in ("", "true", "1", "yes"):
        return True
    raise BadRequest(f"{DRY_RUN} must be true or false")


def _read() -> Caller:
    return require_fleet_read(caller())


def _body(media: tuple[str, ...] = ("application/json",), shape: str = SHAPE) -> object:
    if request.mimetype not in media:
        raise BadRequest(f"{shape}, sent as Content-Type: {' or '.join(media)}")
    try:
        return loads_checked(request.get_data(cache=False))
    except JSONRejected as exc:
        raise BadRequest(f"{shape}: {exc}") from None


def _with_etag(view: Mapping[str, object], etag: str | None,
               status: int = 200) -> tuple[Response, int]:
    resp = jsonify(view)
    if etag:
        resp.headers["ETag"] = f'"{etag}"'
    return resp, status


@bp.post("/v1/fleet-deployment")
def create_fleet() -> tuple[Response, int]:
    _change()
    only_query(DRY_RUN)
    if _dry_run():
        return jsonify(fleet_service().preview_create(_body(), str(uuidlib.uuid4()))), 200
    created = fleet_service().create(_body(), str(uuidlib.uuid4()))
    resp = jsonify(created)
    resp.headers["Location"] = url_for("fleet.get_fleet", fleet=created["uuid"])
    return resp, 201


@bp.get("/v1/fleet-deployment")
def list_fleets() -> Response:
    _read()
    only_query()
    return jsonify({"fleetDeployments": fleet_service().list()})


@bp.get("/v1/fleet-deployment/<fleet:fleet>")
def get_fleet(fleet: str) -> tuple[Response, int]:
    _read()
    only_query()
    return _with_etag(*fleet_service().get(fleet))


@bp.patch("/v1/fleet-deployment/<fleet:fleet>")
def patch_fleet(fleet: str) -> tuple[Response, int]:
    _change()
    only_query(DRY_RUN)
    patch = _body(("application/merge-patch+json", "application/json"))
    if_match = request.headers.get("If-Match")
    etag = if_match.strip().strip('"') if if_match else None
    if _dry_run():
        return jsonify(fleet_service().preview_patch(fleet, patch, etag)), 200
    return jsonify(fleet_service().patch(fleet, patch, etag)), 200


@bp.delete("/v1/fleet-deployment/<fleet:fleet>")
def delete_fleet(fleet: str) -> tuple[Response, int]:
    _change()
    only_query()
    fleet_service().delete(fleet)
    return jsonify({"uuid": fleet, "deleted": True}), 202


@bp.post("/v1/rollout")
def create_rollout() -> tuple[Response, int]:
    who = _change()
    only_query(DRY_RUN)
    service = ClusterRolloutService(fleet_service().cs, fleet_service().changes)
    if _dry_run():
        return jsonify(service.preview(_body(shape=ROLLOUT_SHAPE), str(uuidlib.uuid4()),
                                       acting(who))), 200
    created = service.create(_body(shape=ROLLOUT_SHAPE), str(uuidlib.uuid4()), acting(who))
    resp = jsonify(created)
    resp.headers["Location"] = url_for("fleet.get_rollout", rollout=created["uuid"])
    return resp, 201


@bp.get("/v1/rollout")
def list_rollouts() -> Response:
    _read()
    only_query()
    return jsonify({"rollouts": RolloutService(fleet_service().cs).list()})


@bp.get("/v1/rollout/<fleet:rollout>")
def get_rollout(rollout: str) -> Response:
    _read()
    only_query()
    return jsonify(RolloutService(fleet_service().cs).get(rollout))


@bp.post("/v1/rollout/<fleet:rollout>/pause", defaults={"action": "pause"})
@bp.post("/v1/rollout/<fleet:rollout>/resume", defaults={"action": "resume"})
@bp.post("/v1/rollout/<fleet:rollout>/abort", defaults={"action": "abort"})
@bp.post("/v1/rollout/<fleet:rollout>/rollback", defaults={"action": "rollback"})
def request_rollout(rollout: str, action: str) -> tuple[Response, int]:
    _change()
    only_query()
    if request.get_data(cache=False):
        raise BadRequest(f"{action} takes no body")
    return jsonify(RolloutService(fleet_service().cs).request(rollout, action)), 202


@bp.post("/v1/rollout/<fleet:rollout>/start-now")
def start_now(rollout: str) -> tuple[Response, int]:
    """Start ``{clusters: [uuid]}`` of the rollout's current step now, outside their
    maintenance windows (audited as every change is)."""
    _change()
    only_query()
    body = _body(shape=START_NOW_SHAPE)
    if not isinstance(body, dict) or set(body) - {"clusters"}:
        raise BadRequest(START_NOW_SHAPE)
    clusters = body.get("clusters")
    if not (isinstance(clusters, list) and 0 < len(clusters) <= MAX_START_NOW
            and all(isinstance(c, str) and is_uuid(c) for c in clusters)):
        raise Unprocessable(f"clusters: {START_NOW_SHAPE}")
    service = RolloutService(fleet_service().cs)
    return jsonify(service.request(rollout, "start-now", clusters)), 202


@bp.post("/v1/rollout/<fleet:rollout>/promote")
def promote_rollout(rollout: str) -> Response:
    """A complete template rollout's candidate made the default Flux template, written to
    the Config Store with the caller's own credentials (it needs write access to the Flux
    template app; the Cluster Manager has none)."""
    _change()
    only_query()
    if request.get_data(cache=False):
        raise BadRequest("promote takes no body")
    authorization = request.headers.get("Authorization", "")

    def write(app: str, obj: str, value: object) -> None:
        try:
            fleet_service().cs.put_config_as(authorization, app, obj, value)
        except StoreForbidden:
            raise Forbidden("promote writes the default Flux template as you: you need write "
                            "access to the Flux template app (ConfigDB WriteApp on "
                            f"{app}); nothing was written") from None
        except StoreUnauthorized:
            raise Unauthorized("the Config Store refused your credentials for the "
                               "write") from None
    return jsonify(RolloutService(fleet_service().cs).promote(rollout, write))
