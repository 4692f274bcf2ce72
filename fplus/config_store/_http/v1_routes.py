"""The v1 API: internal forwards to v2 (reference §1.6) and the v1-only search."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NoReturn

from flask import Blueprint, Response, jsonify, request

from fplus.jsontypes import JsonValue

from .. import uuids
from .._domain.common.errors import DomainError, Forbidden
from .._domain.common.jsonvalue import parse
from .._domain.configdb import configs, scopes
from .._domain.configdb.search import Query
from .._domain.notify.subscriptions import UNPROCESSABLE, reason_of
from .auth import allowed, caller, store

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

bp = Blueprint("v1", __name__)
log = logging.getLogger(__name__)
_SEG = r"([^/]+)"
_C = uuids.Class
FORWARDS: list[tuple[re.Pattern[str], str]] = [(re.compile(f"^{p}/?$"), t) for p, t in [
    ("/v1/app", f"/v2/class/{_C.App}/member"),
    (f"/v1/app/{_SEG}/config", r"/v2/app/\1/object/\1"),
    (f"/v1/app/{_SEG}/config-schema", rf"/v2/app/{uuids.App.ConfigSchema}/object/\1"),
    (f"/v1/app/{_SEG}/device", rf"/v2/app/\1/class/{_C.Device}"),
    (f"/v1/app/{_SEG}/schema", rf"/v2/app/\1/class/{_C.Schema}"),
    (f"/v1/app/{_SEG}/app", rf"/v2/app/\1/class/{_C.App}"),
    (f"/v1/app/{_SEG}/object", r"/v2/app/\1/object"),
    (f"/v1/app/{_SEG}/(?:device|schema|app|object)/{_SEG}", r"/v2/app/\1/object/\2"),
    (f"/v1/app/{_SEG}/class/{_SEG}", r"/v2/app/\1/class/\2"),
    ("/v1/class", "/v2/class"),
    (f"/v1/class/{_SEG}", r"/v2/class/\1/member"),
    ("/v1/object", "/v2/object"),
    (f"/v1/object/{_SEG}", r"/v2/object/\1"),
]]


def forward_v1(wsgi_app: Callable) -> Callable:
    """WSGI middleware rewriting v1 paths to their v2 equivalents."""

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/v1/") and not path.endswith("/search"):
            refused = environ["REQUEST_METHOD"] == "POST" and path.rstrip("/") == "/v1/app"
            for pattern, target in FORWARDS:
                if not refused and pattern.match(path):
                    environ["PATH_INFO"] = pattern.sub(target, path)
                    break
        return wsgi_app(environ, start_response)

    return app


@bp.post("/v1/app")
@bp.get("/v1/app/<_app>")
def refused(_app: str = "") -> NoReturn:
    raise Forbidden("not available in v1")


@bp.get("/v1/app/<uuid:app>/search")
@bp.get("/v1/app/<uuid:app>/class/<uuid:klass>/search")
def search(app: str, klass: str | None = None) -> Response:
    """The objects whose entries match; a caller holding ReadApp only for some entries of
    the app finds only those."""
    core = store().core
    wide = allowed(uuids.ConfigDBPerm.ReadApp, app)
    if not wide and not scopes.may_search(core.acl, caller(), app):
        raise Forbidden(f"permission denied: searching needs ReadApp on app {app}")
    query = Query(request.args.items(multi=True))
    try:
        objs = (configs.app_class_objects(core, app, klass) if klass
                else configs.app_objects(core, app))
    except DomainError:
        return jsonify([])
    wanted = set(objs)
    entries: list[tuple[str, JsonValue]]
    if app == uuids.App.Registration:
        entries = [(o, core.graph.objects[o].registration()) for o in objs]
    else:  # SQLite filters; only matching entries are parsed (and checked again)
        rows = core.storage.reader().search_entries(app, query.sql_conditions())
        entries = list(_parsed(app, ((o, t) for o, t in rows if o in wanted)))
    if not wide:
        entries = [(o, v) for o, v in entries if scopes.may_read(core.acl, caller(), app, o, v)]
    return jsonify(query.run(entries))


def _parsed(app: str, rows: Iterable[tuple[str, str]]) -> Iterable[tuple[str, JsonValue]]:
    """The rows' entries, parsed; one stored before nesting was checked at the door, too deep
    to parse, is left out (logged), so it cannot fail the search of every other entry (as in a
    notify SEARCH, where it is answered as unprocessable)."""
    for obj, text in rows:
        try:
            yield obj, parse(text)
        except UNPROCESSABLE as exc:
            log.warning("search of app %s: entry of %s left out: %s", app, obj,
                        reason_of(exc))
