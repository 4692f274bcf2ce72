"""The operations of a ``POST /v2/batch`` body, checked before any of them runs.

Each operation is a request the single routes serve: ``method``, ``path`` (``/v2/...``),
an optional JSON ``body``, optional ``If-Match``/``If-None-Match`` ``headers``, and the
statuses it may ``accept`` besides the 2xx/3xx ones. Every refusal is a 400 naming the
operation and its field (413 for more operations than the limit); nothing has run then.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound
from werkzeug.routing import MapAdapter, RequestRedirect, Rule

from fplus.jsontypes import JsonValue
from fplus.serving import JSONRejected, loads_checked
from fplus.serving.http.jsondoc import MAX_DEPTH

from .._domain.common.errors import BadRequest, DomainError

METHODS = ("GET", "PUT", "PATCH", "POST", "DELETE")
HEADERS = {"if-match": "If-Match", "if-none-match": "If-None-Match"}
"""The request headers an operation may carry, by their lower-case name."""
BLUEPRINTS = frozenset({"apps", "objects", "grants", "identities", "auth"})
"""The ConfigDB and Auth route modules whose routes an operation may name."""
REFUSED_ENDPOINTS = frozenset({"auth.token", "auth.end_token"})
FIELDS = frozenset({"method", "path", "body", "headers", "accept"})
MERGE_PATCH = "application/merge-patch+json"


class TooManyOperations(DomainError):
    """More operations than ``--batch-max-operations``."""

    status = 413


@dataclass(frozen=True)
class Operation:
    """One checked operation."""

    method: str
    path: str
    body: bytes | None
    headers: dict[str, str]
    accept: frozenset[int]
    route: tuple[Rule, Mapping[str, Any]] | None = None
    """The route it reached when checked, with its arguments (None: the route answers
    the path's error as alone)."""
    parsed: JsonValue = None
    """The body as parsed with the batch (checked as a single request's body is: its depth
    is the batch's less the three levels above it); :attr:`body` is its bytes."""

    @property
    def content_type(self) -> str | None:
        """The body's media type, as the single route wants it."""
        if self.body is None:
            return None
        return MERGE_PATCH if self.method == "PATCH" else "application/json"

    def passes(self, status: int) -> bool:
        """Whether ``status`` lets the batch go on."""
        return status < 400 or status in self.accept


def parse(raw: bytes, limit: int, routes: MapAdapter) -> list[Operation]:
    """The operations of a batch body; 400 (or 413 past ``limit``) saying what is wrong."""
    try:  # an operation's body may nest as deep as a single request's
        doc: JsonValue = loads_checked(raw, MAX_DEPTH + 3)
    except JSONRejected as exc:
        raise BadRequest(f"request body refused: {exc}") from None
    ops = doc.get("operations") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or not isinstance(ops, list):
        raise BadRequest('body must be {"operations": [...]}: operations must be a list')
    unknown = sorted(set(doc) - {"operations"})
    if unknown:
        raise BadRequest(f"unknown field {unknown[0]!r}; known: operations")
    if len(ops) > limit:
        raise TooManyOperations(f"{len(ops)} operations: at most {limit} in one batch "
                                "(--batch-max-operations)")
    return [_operation(i, op, routes) for i, op in enumerate(ops)]


def _operation(i: int, op: JsonValue, routes: MapAdapter) -> Operation:
    where = f"operations[{i}]"
    if not isinstance(op, dict):
        raise BadRequest(f"{where} must be an object with method and path")
    unknown = sorted(set(op) - FIELDS)
    if unknown:
        raise BadRequest(f"{where}: unknown field {unknown[0]!r}; known: "
                         f"{', '.join(sorted(FIELDS))}")
    method = op.get("method")
    if not isinstance(method, str) or method not in METHODS:
        raise BadRequest(f"{where}.method must be one of {', '.join(METHODS)}")
    path = op.get("path")
    if not isinstance(path, str) or not path.startswith("/v2/"):
        raise BadRequest(f"{where}.path must be a ConfigDB or Auth route (/v2/...)")
    route = _check_route(where, method, path, routes)
    body = None
    if "body" in op:
        body = json.dumps(op["body"], ensure_ascii=False, separators=(",", ":")).encode()
    return Operation(method, path, body, _headers(where, op.get("headers")),
                     _accept(where, op.get("accept")), route, op.get("body"))


def _check_route(where: str, method: str, path: str,
                 routes: MapAdapter) -> tuple[Rule, Mapping[str, Any]] | None:
    """The route ``method path`` reaches and its arguments; 400 unless it is one of the
    ConfigDB and Auth routes."""
    try:
        rule, args = routes.match(unquote(path.partition("?")[0]), method, return_rule=True)
    except (NotFound, MethodNotAllowed, RequestRedirect):
        raise BadRequest(f"{where}: {method} {path[:200]} is not a ConfigDB or Auth "
                         "route") from None
    except HTTPException:  # a malformed UUID: the route answers it (410) as alone
        return None
    endpoint = str(rule.endpoint)
    if endpoint.partition(".")[0] not in BLUEPRINTS or endpoint in REFUSED_ENDPOINTS:
        raise BadRequest(f"{where}: {method} {path[:200]} cannot be batched (only the "
                         "ConfigDB and Auth routes can)")
    return rule, args


def _headers(where: str, headers: JsonValue) -> dict[str, str]:
    if headers is None:
        return {}
    if not isinstance(headers, dict):
        raise BadRequest(f"{where}.headers must be an object")
    out = {}
    for name, value in headers.items():
        known = HEADERS.get(name.lower())
        if known is None:
            raise BadRequest(f"{where}.headers: {name[:60]!r} is not allowed (only "
                             f"{', '.join(HEADERS.values())})")
        if not isinstance(value, str) or not value or not value.isprintable():
            raise BadRequest(f"{where}.headers.{known} must be a non-empty string")
        out[known] = value
    return out


def _accept(where: str, accept: JsonValue) -> frozenset[int]:
    if accept is None:
        return frozenset()
    if not isinstance(accept, list) or not all(
            isinstance(s, int) and not isinstance(s, bool) and 400 <= s <= 599 for s in accept):
        raise BadRequest(f"{where}.accept must be a list of HTTP statuses (400-599)")
    return frozenset(s for s in accept if isinstance(s, int))
