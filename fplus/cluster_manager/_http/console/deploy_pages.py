"""The console's deployment actions on a cluster's page (deploy a chart, move a deployment to
another host, delete it) and its fleet deployment pages (list, one with its clusters, create).
Each action calls the service the JSON route calls
(:class:`DeploymentService` of :mod:`...services.deployments.cluster_deployments`, the fleet
service) after the same permission check; a refusal re-renders the page with the service's message
next to the field it names, and nothing is written."""

from __future__ import annotations

import re
import uuid as uuidlib

from flask import g, redirect, render_template, request, url_for
from werkzeug.wrappers import Response

from fplus.config_store import uuids
from fplus.kubenames.labels import SelectorSyntaxError, parse_selector

from ...model import edge_deployments as model
from ...services.deployments.cluster_deployments import DeploymentService
from ...services.errors import ApiError
from ..context import require, services
from ..fleet_routes import fleet_service, require_fleet_read
from .change_preview import is_dry_run, preview
from .deployment_view import deployable_charts, parse_values
from .name_lookup import chart_names, cluster_names
from .pages import bp, cluster_page
from .session import signed_in

FORM_FIELDS = ("name", "chart", "hostname", "values")
FLEET_FIELDS = ("name", "chart", "selector", "values")


def _fields(message: str, fields: tuple[str, ...] = FORM_FIELDS) -> dict[str, str]:
    """A service refusal (``field: why; field: why``) as errors by form field (``""``: the
    form as a whole; ``selector.matchLabels``: the selector)."""
    errors: dict[str, str] = {}
    for part in message.split("; "):
        field, _, why = part.partition(": ")
        head = re.split(r"[.\[]", field, maxsplit=1)[0]
        key = head if why and head in fields else ""
        errors[key] = f"{errors[key]}; {part}" if key in errors else part
    return errors


def _service() -> DeploymentService:
    return DeploymentService(services().cs)


@bp.post("/cluster/<cluster:cluster>/deployment")
@signed_in
def deploy(cluster: str) -> Response | tuple[str, int]:
    require(uuids.EdgePerm.Clusters, cluster, g.console.authorization)
    form = request.form
    body: dict[str, object] = {"name": form.get("name", "").strip(),
                               "chart": form.get("chart", "").strip()}
    if form.get("hostname"):
        body["hostname"] = form["hostname"]
    values, refused = parse_values(form.get("values", ""))
    if values is not None:
        body["values"] = values
    errors = {**model.request_errors(body), **({"values": refused} if refused else {})}
    if not errors:
        try:
            _service().create(cluster, body)
        except ApiError as exc:
            errors = _fields(exc.message)
        else:
            return redirect(url_for("console.cluster", cluster=cluster, done="deployed",
                                    _anchor="tab-deployments"), 303)
    return cluster_page(cluster, deploy_errors=errors, deploy_form=form), 422


@bp.post("/cluster/<cluster:cluster>/deployment/<deployment:deployment>/move")
@signed_in
def move(cluster: str, deployment: str) -> Response | tuple[str, int]:
    require(uuids.EdgePerm.Clusters, cluster, g.console.authorization)
    host = request.form.get("hostname") or None
    try:
        _service().patch(cluster, deployment, {"hostname": host})
    except ApiError as exc:
        return cluster_page(cluster, row_error={deployment: exc.message}), exc.status
    return redirect(url_for("console.cluster", cluster=cluster, done="moved",
                            _anchor="tab-deployments"), 303)


@bp.post("/cluster/<cluster:cluster>/deployment/<deployment:deployment>/delete")
@signed_in
def undeploy(cluster: str, deployment: str) -> Response | tuple[str, int]:
    require(uuids.EdgePerm.Clusters, cluster, g.console.authorization)
    try:
        _service().delete(cluster, deployment)
    except ApiError as exc:
        return cluster_page(cluster, row_error={deployment: exc.message}), exc.status
    return redirect(url_for("console.cluster", cluster=cluster, done="undeployed",
                            _anchor="tab-deployments"), 303)


def _fleets_page(**extra: object) -> str:
    may_create = services().access.allowed(g.console.caller, uuids.EdgePerm.Clusters,
                                           uuids.NULL)
    return render_template("fleets.html", fleets=fleet_service().list(), can_create=may_create,
                           chart_names=chart_names(), cluster_names=cluster_names(),
                           charts=deployable_charts() if may_create else [], **extra)


@bp.get("/fleet")
@signed_in
def fleets() -> str:
    require_fleet_read(g.console.caller)
    return _fleets_page()


@bp.post("/fleet")
@signed_in
def create_fleet() -> Response | tuple[str, int]:
    """Create a fleet deployment from ``{name, chart, selector (Kubernetes' text form),
    values?}``, checked as ``POST /v1/fleet-deployment`` checks it; with ``?dryRun``, its
    preview (:mod:`.change_preview`)."""
    require(uuids.EdgePerm.Clusters, uuids.NULL, g.console.authorization)
    form = request.form
    body: dict[str, object] = {"name": form.get("name", "").strip(),
                               "chart": form.get("chart", "").strip()}
    errors: dict[str, str] = {}
    if form.get("selector", "").strip():
        try:
            body["selector"] = parse_selector(form["selector"])
        except SelectorSyntaxError as exc:
            errors["selector"] = f"selector: {exc}"
    values, refused = parse_values(form.get("values", ""))
    if refused:
        errors["values"] = refused
    elif values is not None:
        body["values"] = values
    if not errors:
        try:
            if is_dry_run():  # the preview, with a Confirm that posts the same fields
                shown = preview(fleet_service().preview_create(body, str(uuidlib.uuid4())),
                                url_for("console.create_fleet"), form, FLEET_FIELDS)
                return _fleets_page(fleet_form=form, preview=shown), shown.status
            created = fleet_service().create(body, str(uuidlib.uuid4()))
        except ApiError as exc:
            errors = _fields(exc.message, FLEET_FIELDS)
        else:
            return redirect(url_for("console.fleet", fleet=created["uuid"]), 303)
    return _fleets_page(fleet_errors=errors, fleet_form=form), 422


@bp.get("/fleet/<fleet:fleet>")
@signed_in
def fleet(fleet: str) -> str:
    require_fleet_read(g.console.caller)
    return render_template("fleet.html", fleet=fleet_service().get(fleet)[0],
                           chart_names=chart_names(), cluster_names=cluster_names())
