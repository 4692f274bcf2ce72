"""Smart-HTTP Git at ``/uuid/<repo>/…`` and ``/git/<group>/<name>/…``.

The order of the checks is part of the security model (as ACS): who calls (401), then
may they pull or push this repo (403), then is it configured (404). A caller without the
grant cannot tell configured repos from unconfigured ones.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import IO

from flask import Blueprint, Response, request
from werkzeug.exceptions import NotFound, ServiceUnavailable

from fplus.config_store import uuids

from .auth import authenticated, caller, require
from .backend import run_backend
from .context import server
from .metrics import git_metrics
from .params import backend_path, is_push, repo_uuid
from .push_body import spool_push

bp = Blueprint("repos", __name__)
View = Callable[[str, str], Response]


def _permission(rest: str) -> str:
    return uuids.GitPerm.Push if is_push(rest) else uuids.GitPerm.Pull


def well_formed(view: View) -> View:
    """Decorate a ``(repo, rest)`` view: 410/400 for a malformed request before anything
    else, credentials included."""

    @functools.wraps(view)
    def wrapper(repo: str, rest: str) -> Response:
        return view(repo_uuid(repo), backend_path(rest))

    return wrapper


def _serve(repo: str, rest: str) -> Response:
    """Permission, then existence, then ``git http-backend`` (storage made on first use); a
    push's body is whole and within the push limit before http-backend starts."""
    git = server()
    require(_permission(rest), repo)
    if git.registry.get(repo) is None:
        raise NotFound("no such repository")
    git.storage.ensure(repo)
    pushing = request.method == "POST" and is_push(rest)
    spool = spool_push(request.environ, git.push_limit) if pushing else None
    status, headers, body = run_backend(git.storage.root, f"/{repo}.git/{rest}",
                                        request.environ, caller().uuid)
    _count(pushing, rest, status)
    if spool is not None:
        body = _then(body, functools.partial(_pushed, spool, git.changes.changed))
    return Response(body, status=status, headers=headers, direct_passthrough=True)


def _count(pushing: bool, rest: str, status: int) -> None:
    """A push is its ``git-receive-pack`` POST (one per push that sends something); a fetch
    or clone its ``git-upload-pack`` ref advertisement (one per command, whatever protocol
    version, even when nothing is new)."""
    if pushing:
        git_metrics().pushes.labels(str(status)).inc()
    elif (request.method == "GET" and rest == "info/refs"
          and request.args.get("service") == "git-upload-pack"):
        git_metrics().fetches.labels(str(status)).inc()


def _pushed(spool: IO[bytes], changed: Callable[[], None]) -> None:
    """A push has landed or failed: its spooled body goes, watchers are told."""
    spool.close()
    changed()


def _then(body: Iterator[bytes], done: Callable[[], None]) -> Iterator[bytes]:
    """``body``, then ``done()`` once http-backend has ended (a push has landed or failed)."""
    try:
        yield from body
    finally:
        done()


@bp.route("/uuid/<repo>/<path:rest>", methods=["GET", "POST"])
@well_formed
@authenticated
def by_uuid(repo: str, rest: str) -> Response:
    """A repo by its uuid."""
    return _serve(repo, rest)


@bp.route("/git/<group>/<name>/<path:rest>", methods=["GET", "POST"])
@authenticated
def by_path(group: str, name: str, rest: str) -> Response:
    """A repo by the ``group/name`` path of its configuration entry."""
    found = server().registry.by_path(f"{group}/{name}")
    if not found:
        # As ACS (an unknown path is /uuid/undefined): only a wildcard holder learns "404".
        require(_permission(rest), uuids.NULL)
        raise NotFound("no such repository")
    if len(found) > 1:
        raise ServiceUnavailable(f"{group}/{name} names {len(found)} repositories")
    return _serve(repo_uuid(found[0]), backend_path(rest))
