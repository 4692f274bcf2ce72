"""``/ping``, and ``/v1/status``: which repos are configured, and their branches."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify
from werkzeug.exceptions import NotFound

from config_store import uuids

from .auth import authenticated
from .context import server
from .params import repo_uuid

bp = Blueprint("status", __name__)


@bp.get("/ping")
def ping() -> Response:
    """Who this service is (no credentials needed)."""
    return jsonify({"version": "1.0.0", "service": uuids.Service.Git,
                    "software": {"vendor": "fplus-edge-manager", "application": "git-server"}})


@bp.get("/v1/status")
@authenticated
def status_list() -> Response:
    """Every configured repo uuid (any authenticated caller)."""
    return jsonify(server().registry.configured())


@bp.get("/v1/status/<repo>")
@authenticated
def status(repo: str) -> Response:
    """``{branch: sha}`` of a configured repo (404 for an unknown one; ACS hangs)."""
    git = server()
    repo = repo_uuid(repo)
    if git.registry.get(repo) is None:
        raise NotFound("no such repository")
    return jsonify(git.storage.branches(repo) if git.storage.exists(repo) else {})
