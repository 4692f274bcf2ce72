"""The Git server's Flask app: smart-HTTP repos behind Config Store ACLs, and status routes."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Blueprint, Flask, Response, current_app, jsonify, request
from werkzeug.exceptions import HTTPException

from config_store import uuids
from config_store.client import Access, Caller, ConfigStoreError

from .._domain.registry import RepoRegistry
from .._domain.storage import UUID, RepoStorage
from .backend import run_backend

bp = Blueprint("git", __name__)
CHALLENGE = {"WWW-Authenticate": 'Basic realm="Factory+"'}


@dataclass
class GitServer:
    """What the routes need."""

    access: Access
    registry: RepoRegistry
    storage: RepoStorage


def _server() -> GitServer:
    return current_app.extensions["git_server"]


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    resp = jsonify({"error": message})
    resp.status_code = status
    resp.headers.update(headers or {})
    return resp


def _authenticate() -> Caller | Response:
    principal = _server().access.principal(request.headers.get("Authorization"))
    if principal is None:
        return _error(401, "authentication required", CHALLENGE)
    return principal


def _is_push(rest: str) -> bool:
    return (rest.endswith("git-receive-pack")
            or "git-receive-pack" in request.args.getlist("service"))


def _bad_rest(rest: str) -> str | None:
    """Why ``rest`` must not reach http-backend (it answers 500 to these), or None."""
    if "\0" in rest:
        return "NUL in path"
    if any(part in (".", "..") for part in rest.split("/")):
        return "dot segments in path"
    if len(request.args.getlist("service")) > 1:
        return "more than one service parameter"
    return None


def _serve_repo(repo: str, rest: str) -> Response:
    """Authenticate, check Pull/Push on the repo, then check it is configured (as ACS)."""
    if not UUID.match(repo):
        return _error(410, f"malformed repo uuid {repo!r}")
    if (why := _bad_rest(rest)) is not None:
        return _error(400, why)
    principal = _authenticate()
    if isinstance(principal, Response):
        return principal
    server = _server()
    permission = uuids.GitPerm.Push if _is_push(rest) else uuids.GitPerm.Pull
    if not server.access.allowed(principal, permission, repo):
        return _error(403, "permission denied")
    if server.registry.get(repo) is None:
        return _error(404, "no such repository")
    server.storage.ensure(repo)
    status, headers, body = run_backend(server.storage.root, f"/{repo}.git/{rest}",
                                        request.environ, principal.uuid)
    return Response(body, status=status, headers=headers, direct_passthrough=True)


@bp.route("/uuid/<repo>/<path:rest>", methods=["GET", "POST"])
def by_uuid(repo: str, rest: str) -> Response:
    return _serve_repo(repo, rest)


@bp.route("/git/<group>/<name>/<path:rest>", methods=["GET", "POST"])
def by_path(group: str, name: str, rest: str) -> Response:
    principal = _authenticate()
    if isinstance(principal, Response):
        return principal
    server = _server()
    found = server.registry.by_path(f"{group}/{name}")
    if not found:
        # As ACS (an unknown path is /uuid/undefined): only a wildcard holder learns "404".
        permission = uuids.GitPerm.Push if _is_push(rest) else uuids.GitPerm.Pull
        if not server.access.allowed(principal, permission, uuids.NULL):
            return _error(403, "permission denied")
        return _error(404, "no such repository")
    if len(found) > 1:
        return _error(503, f"{group}/{name} names {len(found)} repositories")
    return _serve_repo(found[0], rest)


@bp.get("/v1/status")
def status_list() -> Response:
    principal = _authenticate()
    if isinstance(principal, Response):
        return principal
    return jsonify(_server().registry.configured())


@bp.get("/v1/status/<repo>")
def status(repo: str) -> Response:
    """``{branch: sha}`` of a configured repo (404 for an unknown one; ACS hangs)."""
    principal = _authenticate()
    if isinstance(principal, Response):
        return principal
    server = _server()
    if not UUID.match(repo):
        return _error(410, f"malformed repo uuid {repo!r}")
    if server.registry.get(repo) is None:
        return _error(404, "no such repository")
    return jsonify(server.storage.branches(repo) if server.storage.exists(repo) else {})


def _storage_admin() -> Response | None:
    principal = _authenticate()
    if isinstance(principal, Response):
        return principal
    if not _server().access.allowed(principal, uuids.GitPerm.ManageStorage, uuids.NULL,
                                    wild=False):
        return _error(403, "needs Manage storage on the wildcard")
    return None


@bp.get("/v1/storage")
def storage_list() -> Response:
    return _storage_admin() or jsonify(_server().storage.stored())


@bp.delete("/v1/storage/<repo>")
def storage_delete(repo: str) -> Response | tuple[str, int]:
    """Archive a repo's storage (moved aside under the data dir, never destroyed)."""
    refused = _storage_admin()
    if refused is not None:
        return refused
    if not UUID.match(repo):
        return _error(410, f"malformed repo uuid {repo!r}")
    if not _server().storage.delete(repo):
        return _error(404, "no storage for that repository")
    return "", 204


@bp.get("/ping")
def ping() -> Response:
    return jsonify({"version": "1.0.0", "service": uuids.Service.Git,
                    "software": {"vendor": "fplus-edge-manager", "application": "git-server"}})


def create_app(server: GitServer) -> Flask:
    """A Flask app serving ``server``."""
    app = Flask("git_server", static_folder=None)
    app.extensions["git_server"] = server
    app.register_blueprint(bp)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        return _error(exc.code or 500, exc.description or exc.name)

    @app.errorhandler(ConfigStoreError)
    def store_error(exc: ConfigStoreError) -> Response:
        return _error(503, "the Config Store could not answer")

    return app
