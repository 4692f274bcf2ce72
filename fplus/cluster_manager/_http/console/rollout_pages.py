"""The console's rollouts: every rollout listed at ``/ui/rollout``, and a rollout's page: its
progress as ``GET /v1/rollout/<r>`` answers it (its state, its steps with their clusters by
name, the failed clusters and why, the reason it halted or was rolled back, the clusters
skipped as offline and those waiting for a maintenance window, a request the leader has not
taken yet, the note an abort leaves), with **Pause**, **Resume**, **Abort** and **Roll back**
buttons, and **Start now** on each waiting cluster, shown only in the states that allow
them. The page reads only the keys
every kind of rollout has, so it serves any ``kind``. The buttons do what the JSON routes do,
after the same permission check; a refusal re-renders the page with the service's message,
and nothing is written."""

from __future__ import annotations

from flask import g, redirect, render_template, request, url_for
from werkzeug.wrappers import Response

from fplus.config_store import uuids
from fplus.config_store.uuids import is_uuid
from fplus.jsontypes import Doc

from ...rollouts.service import ALLOWED, RolloutService
from ...services.errors import ApiError, BadRequest
from ..context import require, services
from ..fleet_routes import fleet_service, require_fleet_read
from .name_lookup import cluster_names
from .pages import bp
from .session import signed_in

REQUESTED = {"pause": "Pause requested: the rollout stops starting clusters once the leader "
             "takes it.", "resume": "Resume requested: the leader carries on from where the "
             "rollout stood.", "abort": "Abort requested: every cluster stays as it is.",
             "rollback": "Roll back requested: every cluster the rollout changed gets what "
             "it had before.", "start-now": "Start now requested: the cluster is changed "
             "outside its maintenance windows once the leader takes it."}
START_NOW = "start-now"
"""Asked per waiting cluster (a button on its row), not of the whole rollout."""


def _service() -> RolloutService:
    return RolloutService(fleet_service().cs)


def _fleet_kind(view: Doc) -> bool:
    """Whether the rollout is a fleet deployment's (whose page the rollout's links to)."""
    kind = view.get("kind")
    return kind is None or "fleet" in str(kind).lower()


def rollout_context(rollout: str) -> dict[str, object]:
    """What the rollout templates show: the view, the names of its clusters, the actions
    its state allows (none for those who may not ask for them)."""
    view = _service().get(rollout)
    may = services().access.allowed(g.console.caller, uuids.EdgePerm.Clusters, uuids.NULL)
    state = view.get("state")
    allowed = [a for a, states in ALLOWED.items() if state in states] if may else []
    return {"r": view, "names": cluster_names(),
            "actions": [a for a in allowed if a != START_NOW],
            "start_now": START_NOW in allowed, "fleet_kind": _fleet_kind(view)}


def _page(rollout: str, status: int = 200, **extra: object) -> tuple[str, int]:
    return render_template("rollout.html", **rollout_context(rollout), **extra), status


@bp.get("/rollout")
@signed_in
def rollouts() -> str:
    """Every rollout, fleet deployments' and cluster rollouts', as ``GET /v1/rollout``
    lists them, each with its state and a link to its page."""
    require_fleet_read(g.console.caller)
    return render_template("rollouts.html", rollouts=_service().list())


@bp.get("/rollout/<fleet:rollout>")
@signed_in
def rollout(rollout: str) -> tuple[str, int]:
    require_fleet_read(g.console.caller)
    return _page(rollout, done=REQUESTED.get(request.args.get("done", "")))


@bp.get("/rollout/<fleet:rollout>/progress")
@signed_in
def rollout_progress(rollout: str) -> str:
    """The progress alone, for the page to follow it without a reload."""
    require_fleet_read(g.console.caller)
    return render_template("_rollout.html", **rollout_context(rollout))


@bp.post("/rollout/<fleet:rollout>/<any(pause, resume, abort, rollback, 'start-now'):action>")
@signed_in
def rollout_action(rollout: str, action: str) -> Response | tuple[str, int]:
    """Ask the leader to pause, resume, abort or roll back the rollout, or to start the
    form's ``cluster`` now (``POST /v1/rollout/<r>/…``)."""
    require(uuids.EdgePerm.Clusters, uuids.NULL, g.console.authorization)
    cluster = request.form.get("cluster", "")
    if action == START_NOW and not is_uuid(cluster):
        raise BadRequest("start now needs the cluster's uuid")
    try:
        _service().request(rollout, action, [cluster] if action == START_NOW else None)
    except ApiError as exc:
        if exc.status == 404:
            raise
        return _page(rollout, exc.status, action_error=exc.message)
    return redirect(url_for("console.rollout", rollout=rollout, done=action), 303)
