"""The console's pages and actions. Reads and writes go through the API wing with the same
permission checks as the JSON routes (:func:`require`, :func:`require_view`), as the
signed-in user; a page hides the buttons its user may not use, and the check refuses anyway."""

from __future__ import annotations

import json
import shlex
import uuid as uuidlib
from collections.abc import Mapping

from flask import Blueprint, abort, g, redirect, render_template, request, url_for
from werkzeug.wrappers import Response  # what redirect() answers; flask's is a subclass

from fplus.bootstrap.command import bootstrap_command
from fplus.config_store import uuids
from fplus.jsontypes import Doc, as_list, as_object, is_object

from ...model.apps_and_roles import CONFIG_APP
from ...model.cluster_config import config_errors
from ...sealing import SealingError
from ...services.charts.chart_templates import ChartService
from ...services.clusters.edge_status import read_edge_status
from ...services.errors import ApiError, Conflict, NotFound, Unauthorized
from ..cluster_routes import approve_sealing_key, issue_bootstrap_url, status_view
from ..context import acting, require, require_view, services
from ..kube_routes import LEVELS
from .change_preview import Preview, is_dry_run, preview
from .deployment_view import cluster_deployments, cluster_labels, parse_values
from .name_lookup import by_name, chart_names
from .session import (
    clear_cookie,
    log_in,
    log_out,
    next_path,
    same_origin_post,
    set_cookie,
    signed_in,
)
from .timeline import iso, timeline

bp = Blueprint("console", __name__, url_prefix="/ui", template_folder="templates",
               static_folder="static")
DONE = {"created": "Cluster requested: it shows Ready once commissioned.",
        "deleted": "Deletion requested: the cluster goes once its edge applied the teardown.",
        "redeploy": "Redeploy requested.", "sealed": "Secret sealed and committed.",
        "approved": "Sealing key approved: secrets are sealed and re-sealed to it now.",
        "removed": "Secret key removed.", "deployed": "Deployment written: the edge installs "
        "it at its next sync.", "moved": "Deployment moved.",
        "undeployed": "Deployment deleted: the edge uninstalls it at its next sync.",
        "labelled": "Labels saved."}
SCOPES = ("strict", "namespace-wide", "cluster-wide")
NEW_FIELDS = ("name", "namespace", "chart", "flux_version", "bare", "no_sealed_secrets",
              "values")
"""The create form's fields (its Confirm carries them)."""
HOST_FIELDS = ("hostname", "ready", "control_plane", "arch", "k8s_version", "os_version")


@bp.after_request
def _headers(response: Response) -> Response:
    """No caching (pages carry bootstrap commands), no framing, no foreign scripts, and no
    Referer (with a bootstrap token in it) leaving for another site."""
    response.headers["Cache-Control"] = "no-store"
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    return response


@bp.errorhandler(ApiError)
def _refused(exc: ApiError) -> tuple[str, int]:
    return render_template("error.html", status=exc.status, message=exc.message), exc.status


@bp.errorhandler(SealingError)
def _bad_secret(exc: SealingError) -> tuple[str, int]:
    return render_template("error.html", status=400, message=str(exc)), 400


def _may(permission: str, cluster: str) -> bool:
    return services().access.allowed(g.console.caller, permission, cluster)


# -- sign-in ----------------------------------------------------------------------------


@bp.get("/login")
def login() -> str:
    reason = "Your session ended: sign in again." if request.args.get("reason") else None
    return render_template("login.html", notice=reason, next=request.args.get("next", ""))


@bp.post("/login")
def login_post() -> Response | tuple[str, int]:
    same_origin_post()
    user = request.form.get("username", "").strip()
    password = request.form.get("password", "")
    if not user or not password:
        return render_template("login.html", error="Give a username and a password.",
                               user=user, next=request.form.get("next", "")), 400
    try:
        token = log_in(user, password)
    except Unauthorized as exc:
        return render_template("login.html", error=exc.message.capitalize() + ".", user=user,
                               next=request.form.get("next", "")), 401
    return set_cookie(redirect(next_path(request.form.get("next")), 303), user, token)


@bp.post("/logout")
@signed_in
def logout() -> Response:
    log_out(g.console.authorization)
    return clear_cookie(redirect(url_for("console.login"), 303))


# -- clusters -------------------------------------------------------------------------------


def _form_config(form: Mapping[str, str]) -> tuple[dict[str, object], dict[str, str]]:
    config: dict[str, object] = {"name": form.get("name", "").strip(),
                              "namespace": form.get("namespace", "").strip()}
    errors: dict[str, str] = {}
    if form.get("chart", "").strip():
        chart = form["chart"].strip()
        config["chart"] = by_name(chart, chart_names()) or chart
        if config["chart"] == chart and not uuids.is_uuid(chart):
            errors["chart"] = f"no Helm chart template is named {chart!r}"
    if form.get("flux_version", "").strip():
        config["fluxVersion"] = form["flux_version"].strip()
    if form.get("bare"):
        config["bare"] = True
    if form.get("no_sealed_secrets"):
        config["sealedSecrets"] = False
    values, refused = parse_values(form.get("values", ""))
    if refused:
        errors["values"] = refused
    elif values is not None:
        config["values"] = values
    return config, {**config_errors(config), **errors}


@bp.route("/new", methods=["GET", "POST"])
@signed_in
def new_cluster() -> Response | tuple[str, int]:
    who = require(uuids.EdgePerm.Clusters, uuids.NULL, g.console.authorization)
    if request.method == "GET":
        return _new_form({"namespace": "fplus-edge"}, {}), 200
    config, errors = _form_config(request.form)
    if not errors:
        try:
            if is_dry_run():  # the preview, with a Confirm that posts the same fields
                shown = preview(services().clusters.preview_create(
                    config, str(uuidlib.uuid4()), acting(who)),
                    url_for("console.new_cluster"), request.form, NEW_FIELDS, link=False)
                return _new_form(request.form, {}, shown), shown.status
            created = services().clusters.create(config, str(uuidlib.uuid4()), acting(who))
        except Conflict as exc:
            errors["name"] = exc.message
        except ApiError as exc:
            errors[""] = exc.message
        else:
            return redirect(url_for("console.cluster", cluster=created["uuid"], done="created"),
                            303)
    return _new_form(request.form, errors), 422


def _new_form(form: Mapping[str, str], errors: dict[str, str],
              shown: Preview | None = None) -> str:
    """The create form, offering the chart templates and the imported Flux versions to pick
    from (the fields still take any value, checked as the API checks it); ``shown``: the
    preview of the cluster asked for."""
    imports = services().imports
    try:
        versions = imports.flux_versions() if imports is not None else []
    except Exception:  # the central repo unreadable: the field is typed instead
        versions = []
    return render_template("new.html", form=form, errors=errors, flux_versions=versions,
                           charts=ChartService(services().cs).templates(), preview=shown)


def _edge_report(cluster: str) -> dict[str, list[dict[str, str]]]:
    """The hosts and deployments the edge reported, as rows of text (the entry is written
    by the edge, so anything not of the expected shape is left out)."""
    edge = read_edge_status(services().cs, cluster) or {}
    hosts = [{k: _text(h.get(k)) for k in HOST_FIELDS}
             for h in as_list(edge.get("hosts")) if is_object(h)]
    deployments = as_object(edge.get("deployments"))
    rows = [{"name": _text(r), "state": "applied", "error": ""}
            for r in as_list(deployments.get("releases")) if isinstance(r, str)]
    rows += [{"name": _text(f.get("name") or f.get("uuid")), "state": "failed",
              "error": _text(f.get("error"))}
             for f in as_list(deployments.get("failed")) if is_object(f)]
    return {"hosts": hosts, "deployments": rows}


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)


def display_name(cluster: str, status: Doc) -> str:
    """The cluster's name: as commissioned, else as requested (a configuration refused at
    creation, or not yet seen by the reconciler), else its uuid."""
    refused = status.get("refused")
    for spec in (status.get("spec"), refused.get("spec") if isinstance(refused, dict) else None):
        name = spec.get("name") if isinstance(spec, dict) else None
        if isinstance(name, str) and name:
            return name
    config = services().cs.get_config(CONFIG_APP, cluster)
    name = config.get("name") if isinstance(config, dict) else None
    return name if isinstance(name, str) and name else cluster


def tunnel_view(status: Mapping[str, object]) -> dict[str, str]:
    """The cluster's tunnel as its status says it, for its page: ``state`` (connected, down,
    or unknown where the Cluster Manager serves no tunnels) and a ``text`` saying since when
    (or that its edge never connected)."""
    found = as_object(status.get("tunnel"))
    state, since = found.get("state"), found.get("since")
    since = since if isinstance(since, str) and since else None
    if state == "connected":
        return {"state": "connected", "text": f"since {since}" if since else ""}
    if state == "down":
        return {"state": "down", "text": f"since {since}" if since else "never connected"}
    return {"state": "unknown", "text": "this Cluster Manager reports no tunnel state"}


def kubeconfig_command(name: str) -> str:
    """The command that writes a kubeconfig for the cluster (quoted for a POSIX shell)."""
    return f"fplus cluster kubeconfig {shlex.quote(name)} -o {shlex.quote(name + '.kubeconfig')}"


def cluster_page(cluster: str, **extra: object) -> str:
    """The cluster's page; ``extra``: a form's refusal and what was typed, or a result."""
    status = status_view(cluster)
    can_manage = _may(uuids.EdgePerm.Clusters, cluster)
    can_seal = _may(uuids.EdgePerm.Secrets, cluster)
    secrets = services().secrets.listing(cluster) if can_seal and status.get("ready") else None
    name = display_name(cluster, status)
    kube_level = next((level for level, perm in LEVELS if _may(perm, cluster)), None)
    return render_template("cluster.html", cluster=cluster, status=status, name=name,
                           tunnel=tunnel_view(status), kubeconfig=kubeconfig_command(name),
                           kube_level=kube_level,
                           can_manage=can_manage, can_seal=can_seal, secrets=secrets,
                           scopes=SCOPES, done=DONE.get(request.args.get("done", "")),
                           report=_edge_report(cluster) if status.get("edge") else None,
                           deploys=cluster_deployments(cluster),
                           labels=cluster_labels(cluster),
                           **_history(cluster), **extra)


def _history(cluster: str) -> dict[str, object]:
    """The cluster's timeline (``history``: audit rows, phases reached and commits, newest
    first; ``commits_unreadable``), if the user may read it (Edge.Perm.Audit)."""
    log = services().audit
    if log is None or not _may(uuids.EdgePerm.Audit, cluster):
        return {"history": None}
    items, readable = timeline(cluster, log, services().secrets.repos)
    return {"history": items, "commits_unreadable": not readable}


@bp.get("/cluster/<cluster:cluster>/commit/<sha>")
@signed_in
def commit(cluster: str, sha: str) -> str:
    """One commit of the cluster's repo: its message, author, time and the files it changed
    (never their content); Edge.Perm.Audit, as the timeline linking here."""
    require_view(cluster, g.console.authorization)
    require(uuids.EdgePerm.Audit, cluster, g.console.authorization)
    found = services().secrets.repos.commit(cluster, sha)
    if found is None:
        raise NotFound(f"{sha[:64]} is not a commit of this cluster's repo")
    status = status_view(cluster)
    return render_template("commit.html", cluster=cluster, commit=found,
                           when=iso(found.time),
                           name=display_name(cluster, status))


@bp.get("/cluster/<cluster:cluster>")
@signed_in
def cluster(cluster: str) -> str:
    require_view(cluster, g.console.authorization)
    return cluster_page(cluster)


@bp.get("/cluster/<cluster:cluster>/badge")
@signed_in
def cluster_badge(cluster: str) -> str:
    require_view(cluster, g.console.authorization)
    return render_template("_badge.html", phase=status_view(cluster).get("phase"))


@bp.post("/cluster/<cluster:cluster>/bootstrap")
@signed_in
def bootstrap(cluster: str) -> str:
    require(uuids.EdgePerm.Clusters, cluster, g.console.authorization)
    url = issue_bootstrap_url(cluster)
    api = services()
    ca = api.scripts.edge_ca
    command = bootstrap_command(url, api.external_url.rstrip("/") + "/v1/edge-ca",
                                ca.encode() if ca else None)
    return cluster_page(cluster, command=command,
                         plain_http=url.lower().startswith("http://"))


@bp.post("/cluster/<cluster:cluster>/sealing-key/approve")
@signed_in
def approve_key(cluster: str) -> Response | tuple[str, int]:
    who = require(uuids.EdgePerm.Clusters, cluster, g.console.authorization)
    try:
        approve_sealing_key(cluster, request.form.get("fingerprint", ""), who.uuid)
    except Conflict as exc:
        return cluster_page(cluster, key_error=exc.message), 409
    return redirect(url_for("console.cluster", cluster=cluster, done="approved"), 303)


@bp.post("/cluster/<cluster:cluster>/redeploy")
@signed_in
def redeploy(cluster: str) -> Response:
    require(uuids.EdgePerm.Clusters, cluster, g.console.authorization)
    services().clusters.redeploy(cluster)
    return redirect(url_for("console.cluster", cluster=cluster, done="redeploy"), 303)


@bp.post("/cluster/<cluster:cluster>/delete")
@signed_in
def delete(cluster: str) -> Response | tuple[str, int]:
    require(uuids.EdgePerm.Clusters, cluster, g.console.authorization)
    name = display_name(cluster, status_view(cluster))
    if request.form.get("confirm", "").strip() != name:
        return cluster_page(cluster, delete_error=f"Type {name} to confirm."), 422
    services().clusters.delete(cluster, force=bool(request.form.get("force")))
    return redirect(url_for("console.clusters", done="deleted"), 303)


@bp.post("/cluster/<cluster:cluster>/secret")
@signed_in
def seal(cluster: str) -> Response | tuple[str, int]:
    require(uuids.EdgePerm.Secrets, cluster, g.console.authorization)
    form = request.form
    scope = form.get("scope") or None
    if scope not in (None, *SCOPES):
        abort(400)
    try:
        services().secrets.seal(cluster, form.get("namespace", ""), form.get("name", ""),
                                form.get("key", ""), form.get("value", "").encode(),
                                scope=scope)
    except (ApiError, ValueError) as exc:
        message = exc.message if isinstance(exc, ApiError) else str(exc)
        return cluster_page(cluster, seal_error=message, seal_form=form), 422
    return redirect(url_for("console.cluster", cluster=cluster, done="sealed",
                            _anchor="tab-secrets"), 303)


@bp.post("/cluster/<cluster:cluster>/secret/delete")
@signed_in
def remove_secret(cluster: str) -> Response:
    require(uuids.EdgePerm.Secrets, cluster, g.console.authorization)
    form = request.form
    services().secrets.remove(cluster, form.get("namespace", ""), form.get("name", ""),
                              form.get("key", ""))
    return redirect(url_for("console.cluster", cluster=cluster, done="removed",
                            _anchor="tab-secrets"), 303)
