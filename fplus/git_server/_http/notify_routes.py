"""``/notify/v2``: notify/v2 WATCH of the status URLs, as ACS's Git server serves them.

Upstream (``acs-git/lib/notify.js``) watches ``/v1/status/`` (the configured repo uuids) and
``/v1/status/:uuid`` (``{branch: sha}`` of one repo, 404 if it is not configured). Here a
watch answers exactly what a GET of the same URL would (:func:`.status_routes.repo_list`,
:func:`.status_routes.repo_status`: the list filtered by Git Pull, a repo 403 without it),
re-computed for every update. Updates follow pushes and changes of the configured repos
(:attr:`GitServer.changes`), and every second anyway (mirror pulls, commits written straight
into the repos). The connection itself is :mod:`.._notify.server`'s; its first message
is ``Bearer <token>`` with a Config Store token.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Flask, Response, current_app

from fplus.config_store.client import Caller, ConfigStoreError
from fplus.serving.http import websocket_route
from fplus.serving.notify.wire import PATH

from .._notify.principal_slots import PrincipalSlots
from .._notify.server import serve_watches
from .._notify.watches import Watch, WatchService, WatchSettings
from .context import GitServer, server
from .status_routes import Answer, repo_list, repo_status

log = logging.getLogger(__name__)
bp = Blueprint("notify", __name__)
SETTINGS = "git_notify"
_LIST = re.compile(r"^/?v1/status/?$")
_REPO = re.compile(r"^/?v1/status/([^/]+)$")


def install_notify(app: Flask, settings: WatchSettings) -> None:
    """Serve notify/v2 in ``app`` with ``settings``."""
    app.extensions[SETTINGS] = settings, PrincipalSlots(settings.max_connections)
    app.register_blueprint(bp)


def watch_service(git: GitServer) -> WatchService:
    """The status URLs of ``git`` as notify/v2 watches."""

    def identify(token: str) -> Caller | None:
        return git.access.principal(f"Bearer {token}")

    def resolve(url: str) -> Watch | None:
        if _LIST.match(url):
            return lambda who: _response(lambda: repo_list(git, who))
        if found := _REPO.match(url):
            repo = found[1]
            # the registry's notify map only: a newly configured repo is a change anyway
            return lambda who: _response(lambda: repo_status(git, who, repo, ask_store=False))
        return None

    return WatchService(identify, resolve, git.changes.subscribe)


def _response(compute: Callable[[], Answer]) -> dict[str, Any]:
    """The notify response of an HTTP answer; 503 when the Config Store cannot answer (as the
    HTTP routes)."""
    try:
        answer = compute()
    except ConfigStoreError as exc:
        log.debug("notify: the Config Store could not answer: %s", exc)  # at every refresh: quiet
        return {"status": 503}
    if answer.status != 200:
        return {"status": answer.status}
    return {"status": 200, "body": answer.body}


@bp.get(PATH)
def not_upgraded() -> tuple[Response, int]:
    """A plain GET: the endpoint only speaks WebSocket."""
    return websocket_route.not_upgraded()


@bp.route(PATH, websocket=True)
def notify() -> Response | tuple[Response, int]:
    """Authenticate with ``Bearer <token>``, then serve watches until closed."""
    service, (settings, slots) = watch_service(server()), current_app.extensions[SETTINGS]
    return websocket_route.serve_websocket(
        lambda ws: serve_watches(ws, service, settings, slots))
