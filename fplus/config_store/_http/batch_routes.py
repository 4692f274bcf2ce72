"""``POST /v2/batch`` (our extension, not ACS): several ConfigDB/Auth operations in one
request and one database transaction (a batch of reads only: one read snapshot).

Each operation is dispatched in-process to the route the single request would reach, as
the batch's caller (already authenticated), so its status, ETag, body and ACL are the single
request's. Every operation's write joins the batch's transaction
(:meth:`~fplus.config_store._domain.core.state.Core.batch`), audit rows included. The first
operation that fails (a status of 400 or more not in its ``accept``) rolls everything back:
the answer then has that operation's status and ``failed``, its index. Otherwise the batch
commits and subscribers hear each operation's changes as if it had been sent alone.

A batch of ``GET`` operations only opens no write: its reads share one snapshot of the
database (:meth:`~fplus.config_store._domain.core.state.Core.read_batch`).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes

from flask import Blueprint, Flask, Response, current_app, g, request
from flask.ctx import RequestContext
from flask.globals import request_ctx as _request_ctx
from flask.sessions import SessionMixin
from werkzeug.routing import MapAdapter

from fplus.jsontypes import JsonValue

from .. import uuids
from .._domain.auth import audit
from .._domain.core.state import Batch
from .._storage import ReadFirst
from .audit_routes import record_refusal
from .auth import store
from .batch_ops import Operation, parse
from .params import PARSED_BODY

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

bp = Blueprint("batch", __name__)
MAX_OPERATIONS = "BATCH_MAX_OPERATIONS"
"""The app config key of ``--batch-max-operations``."""
DEFAULT_MAX_OPERATIONS = 100


@dataclass(frozen=True)
class Outcome:
    """What one operation answered, and the route that answered it."""

    status: int
    etag: str | None
    body: bytes | None
    """The answer's JSON body as the route encoded it (None: no body, or not JSON)."""
    endpoint: str | None
    view_args: dict[str, Any] | None
    retry_after: str | None

    def result(self) -> bytes:
        """The operation's entry in the batch's ``results``, as JSON: the route's body is
        spliced in as it was encoded, not parsed and encoded again."""
        head = b'{"status":%d' % self.status
        if self.etag is not None:
            head += b',"etag":' + json.dumps(self.etag).encode()
        return head + b',"body":' + (self.body or b"null") + b"}"

    def error(self) -> JsonValue:
        """The ``error`` of the answer's body, if it has one."""
        try:
            body = json.loads(self.body) if self.body else None
        except ValueError:
            return None
        return body.get("error") if isinstance(body, dict) else None


@bp.post("/v2/batch")
def batch() -> Response:
    """Run the operations in order in one transaction; all or nothing."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    limit = int(app.config.get(MAX_OPERATIONS, DEFAULT_MAX_OPERATIONS))
    ops = parse(request.get_data(cache=False), limit, app.url_map.bind("localhost"))
    if not ops:
        return _answer(b'{"results":[]}')
    actor = audit.Actor(g.get("principal"), g.get("request_id") or "")
    run = _Runner(app, actor, _base_environ())
    core = store().core
    if all(op.method == "GET" for op in ops):
        with core.read_batch(_read_first(ops)):
            outcomes, failed = run.all(ops, None)
    else:
        with core.batch(_read_first(ops)) as running:
            outcomes, failed = run.all(ops, running)
    audit.set_actor(actor)
    results = b'"results":[' + b",".join(o.result() for o in outcomes) + b"]"
    if failed is None:
        return _answer(b"{" + results + b"}")
    last = outcomes[failed]
    record_refusal(last.endpoint, last.view_args, last.status)
    reason = last.error()
    status = last.status if last.status >= 400 else 500  # a write that failed half-way
    error = (f"operation {failed} ({ops[failed].method} {ops[failed].path}) failed with "
             f"{last.status}" + (f": {reason}" if reason else ""))
    head = json.dumps({"error": error, "failed": failed})[:-1].encode()
    resp = _answer(head + b"," + results + b"}", status)
    if last.retry_after:
        resp.headers["Retry-After"] = last.retry_after
    return resp


def _answer(body: bytes, status: int = 200) -> Response:
    """A JSON answer of ``body``, already encoded."""
    return Response(body + b"\n", status, mimetype="application/json")


ENTRY_RULE = "/v2/app/<uuid:app>/object/<uuid:obj>"
"""The route of one configuration entry (each of its methods reads the entry)."""
PRINCIPAL_RULE = "/v2/principal"
"""Creating a principal reads who holds its name, its uuid's name and, labelled, its Info."""


def _read_first(ops: list[Operation]) -> ReadFirst:
    """What the operations will read, as far as their routes and bodies tell: the storage
    reads it all as the batch's transaction begins (one round trip with its lock, not one
    each). A guess that misses only costs the read it would have cost anyway."""
    entries: list[tuple[str, str]] = []
    names: list[str] = []
    principals: list[str] = []
    for op in ops:
        if op.route is None:
            continue
        rule, args = op.route[0].rule, op.route[1]
        if rule == ENTRY_RULE:
            app, obj = str(args["app"]), str(args["obj"])
            if app != uuids.App.Registration:  # an object, not a stored entry
                entries.append((app, obj))
        elif rule == PRINCIPAL_RULE and op.method == "POST" and isinstance(op.parsed, dict):
            name, uuid = op.parsed.get("name"), op.parsed.get("uuid")
            if isinstance(name, str):
                names.append(name)
            if isinstance(uuid, str):
                principals.append(uuid.lower())
                if op.parsed.get("label") is not None:
                    entries.append((uuids.App.Info, uuid.lower()))
    return ReadFirst(tuple(dict.fromkeys(entries)), tuple(dict.fromkeys(names)),
                     tuple(dict.fromkeys(principals)))


def _base_environ() -> WSGIEnvironment:
    """What every operation's request keeps of the batch's: the WSGI server's keys, who
    calls and from where (never its body, path or content headers)."""
    keep = ("SERVER_NAME", "SERVER_PORT", "SERVER_PROTOCOL", "REMOTE_ADDR", "REMOTE_PORT",
            "HTTP_HOST", "HTTP_AUTHORIZATION", "HTTP_X_REQUEST_ID")
    environ = request.environ
    base = {k: v for k, v in environ.items() if k.startswith("wsgi.") or k in keep}
    base["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "")
    return base


def _path_info(path: str) -> str:
    """``path`` as a WSGI server hands it over: unquoted, its bytes as latin-1."""
    if "%" not in path and path.isascii():
        return path
    return unquote_to_bytes(path).decode("latin-1")


def _environ(op: Operation, base: WSGIEnvironment) -> WSGIEnvironment:
    """The WSGI environ of ``op`` as a single request (PEP 3333: the path's bytes as
    latin-1, as a server hands it over)."""
    path, _, query = op.path.partition("?")
    body = op.body or b""
    environ = {**base, "REQUEST_METHOD": op.method, "QUERY_STRING": query,
               "PATH_INFO": _path_info(path),
               "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body)}
    if op.content_type is not None:
        environ["CONTENT_TYPE"] = op.content_type
        environ[PARSED_BODY] = op.parsed
    for name, value in op.headers.items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    return environ


class _OperationContext(RequestContext):
    """An operation's request context: its route is the one found when it was checked
    (:func:`~.batch_ops.parse`), not matched again, and ``url_for`` builds with the batch's
    URL adapter (the same host, scheme and script root) instead of binding the URL map
    again. An operation whose path the check could not match is matched as alone."""

    def __init__(self, app: Flask, op: Operation, environ: WSGIEnvironment,
                 session: SessionMixin, adapter: MapAdapter | None) -> None:
        self.route = op.route
        if self.route is None or adapter is None:
            super().__init__(app, environ, session=session)
            return
        # RequestContext.__init__, less the binding of the URL map
        self.app = app
        self.request = app.request_class(environ)
        self.request.json_module = app.json
        self.url_adapter = adapter
        self.flashes = None
        self._session = session
        self._after_request_functions = []
        self._cv_tokens = []

    def match_request(self) -> None:
        if self.route is None:
            super().match_request()
        else:
            self.request.url_rule, args = self.route
            self.request.view_args = dict(args)


class _Runner:
    """Runs a batch's operations, one after another, as its caller."""

    def __init__(self, app: Flask, actor: audit.Actor, base: WSGIEnvironment) -> None:
        self.app, self.actor, self.base = app, actor, base
        self.session = app.session_interface.make_null_session(app)
        self.adapter = _request_ctx.url_adapter

    def all(self, ops: list[Operation],
            running: Batch | None) -> tuple[list[Outcome], int | None]:
        """The operations' outcomes up to the first that fails, and its index (None when
        none did); a failure marks ``running`` (a write batch) to be rolled back."""
        outcomes: list[Outcome] = []
        for i, op in enumerate(ops):
            outcome = self.one(op)
            outcomes.append(outcome)
            if not op.passes(outcome.status) or (running is not None and running.rollback):
                if running is not None:
                    running.rollback = True
                return outcomes, i
        return outcomes, None

    def one(self, op: Operation) -> Outcome:
        """Dispatch ``op`` to its route as the single request would be (the caller's
        principal already proved: the batch's ``g`` is shared), without the per-request
        hooks."""
        app = self.app
        with _OperationContext(app, op, _environ(op, self.base), self.session, self.adapter):
            audit.set_actor(self.actor)  # each operation's request ends by clearing it
            try:
                resp = app.make_response(app.dispatch_request())
            except Exception as exc:
                resp = app.make_response(app.handle_user_exception(exc))
            endpoint, view_args = request.endpoint, request.view_args
        return _outcome(resp, endpoint, view_args)


def _outcome(resp: Response, endpoint: str | None,
             view_args: dict[str, Any] | None) -> Outcome:
    """What ``resp`` answered, as a batch result."""
    body = resp.get_data().strip() if resp.is_json else b""  # the app's own encoding
    return Outcome(resp.status_code, resp.headers.get("ETag"), body or None, endpoint,
                   view_args, resp.headers.get("Retry-After"))
