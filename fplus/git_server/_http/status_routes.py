"""``/ping``, and ``/v1/status``: which repos are configured, and their branches.

A caller sees only the repos it may pull (root sees all): the list is filtered by the Git Pull
permission, and a repo's branches answer 403 without it, before its existence is told (as the
repo routes do). :func:`repo_list` and :func:`repo_status` compute the answers for both the
HTTP routes here and the notify/v2 watches of the same URLs (:mod:`.notify_routes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, jsonify
from werkzeug.exceptions import abort

from fplus.config_store import uuids
from fplus.config_store.client import Caller
from fplus.config_store.uuids import is_uuid

from .auth import authenticated, caller
from .context import GitServer, server

bp = Blueprint("status", __name__)


@dataclass(frozen=True)
class Answer:
    """An HTTP answer before it is sent: a status, and a body or an error message."""

    status: int
    body: Any = None
    error: str = ""


def repo_list(git: GitServer, who: Caller) -> Answer:
    """The configured repo uuids (sorted) ``who`` may pull."""
    return Answer(200, [repo for repo in git.registry.configured()
                        if git.access.allowed(who, uuids.GitPerm.Pull, repo)])


def repo_status(git: GitServer, who: Caller, repo: str, *, ask_store: bool = True) -> Answer:
    """``{branch: sha}`` of a configured repo ``who`` may pull: 410 for a malformed uuid,
    403 without Pull, then 404 for an unknown repo (ACS hangs). ``ask_store``: see
    :meth:`RepoRegistry.get`."""
    if not is_uuid(repo):
        return Answer(410, error=f"malformed repo uuid {repo!r}")
    if not git.access.allowed(who, uuids.GitPerm.Pull, repo):
        return Answer(403, error="permission denied")
    if git.registry.get(repo, ask_store=ask_store) is None:
        return Answer(404, error="no such repository")
    return Answer(200, git.storage.branches(repo) if git.storage.exists(repo) else {})


def _sent(answer: Answer) -> Response:
    if answer.status != 200:
        abort(answer.status, answer.error)
    return jsonify(answer.body)


@bp.get("/ping")
def ping() -> Response:
    """Who this service is (no credentials needed)."""
    return jsonify({"version": "1.0.0", "service": uuids.Service.Git,
                    "software": {"vendor": "fplus-edge-manager", "application": "git-server"}})


@bp.get("/v1/status")
@authenticated
def status_list() -> Response:
    """The configured repo uuids the caller may pull."""
    return _sent(repo_list(server(), caller()))


@bp.get("/v1/status/<repo>")
@authenticated
def status(repo: str) -> Response:
    """``{branch: sha}`` of a configured repo the caller may pull."""
    return _sent(repo_status(server(), caller(), repo))
