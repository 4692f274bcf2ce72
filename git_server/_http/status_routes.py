"""``/ping``, and ``/v1/status``: which repos are configured, and their branches.

A caller sees only the repos it may pull (root sees all): the list is filtered by the Git Pull
permission, and a repo's branches answer 403 without it, before its existence is told (as the
repo routes do).
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify
from werkzeug.exceptions import NotFound

from config_store import uuids

from .auth import authenticated, caller, require
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
    """The configured repo uuids the caller may pull."""
    git, who = server(), caller()
    return jsonify([repo for repo in git.registry.configured()
                    if git.access.allowed(who, uuids.GitPerm.Pull, repo)])


@bp.get("/v1/status/<repo>")
@authenticated
def status(repo: str) -> Response:
    """``{branch: sha}`` of a configured repo the caller may pull (403 without Pull, then 404
    for an unknown one; ACS hangs)."""
    git = server()
    repo = repo_uuid(repo)
    require(uuids.GitPerm.Pull, repo)
    if git.registry.get(repo) is None:
        raise NotFound("no such repository")
    return jsonify(git.storage.branches(repo) if git.storage.exists(repo) else {})
