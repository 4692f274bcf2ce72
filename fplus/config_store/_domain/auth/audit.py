"""The Auth audit log: one append-only row per change made through the Auth API.

A change (a principal created, re-passworded or deleted, a grant added, replaced or removed,
an identity set or removed, a principal put in a group) is recorded by :func:`record` in the
transaction that makes it, so a change is never kept without its row nor a row without its
change. A refused change (403) is recorded by :func:`refused` in a write of its own. Rows
name principals, grants and identities by uuid and name only: never a password, hash, token
or secret value.

Who acts and under which request id is set by the HTTP layer for each request
(:func:`acting`); a change made with nobody acting (the server itself) names no principal.
"""

from __future__ import annotations

import json
import time
import uuid as uuidlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from fplus.jsontypes import JsonObject, JsonValue

from ..._storage import AuditRow, GrantRow
from ..core.state import Core
from ..core.tx import Tx

OK, REFUSED = "ok", "refused"


@dataclass(frozen=True)
class Actor:
    """Who asks for the changes of one request, and the request's id."""

    principal: str | None
    request_id: str


_acting: ContextVar[Actor | None] = ContextVar("fplus_config_store_audit_actor", default=None)


@contextmanager
def acting(actor: Actor) -> Iterator[None]:
    """Changes recorded inside the block name ``actor``."""
    token = _acting.set(actor)
    try:
        yield
    finally:
        _acting.reset(token)


def set_actor(actor: Actor | None) -> None:
    """Name ``actor`` for what follows in this context (a request: the HTTP layer sets it as
    each request begins, whatever the last one on this greenlet left)."""
    _acting.set(actor)


def _actor() -> Actor:
    return _acting.get() or Actor(None, uuidlib.uuid4().hex)


def grant_detail(grant: GrantRow) -> dict[str, str | bool]:
    """What a row says of a grant (uuids only)."""
    out: dict[str, str | bool] = {"principal": grant.principal, "permission": grant.permission,
                           "target": grant.target, "plural": grant.plural}
    if grant.object is not None:
        out["object"] = grant.object
    return out


def _row(actor: Actor, action: str, kind: str, target: str | None, target_name: str | None,
         status: int, detail: Mapping[str, object] | None) -> AuditRow:
    """The row (its actor's name is left to the insert: see ``Writer.add_audit``)."""
    return AuditRow(at=time.time(), request_id=actor.request_id, principal=actor.principal,
                    principal_name=None, action=action, target_kind=kind, target=target,
                    target_name=target_name, outcome=OK if status < 400 else REFUSED,
                    status=status,
                    detail=json.dumps(detail, sort_keys=True) if detail else None)


def record(tx: Tx, action: str, kind: str, target: str | None, *,
           target_name: str | None = None, target_principal: str | None = None,
           detail: Mapping[str, object] | None = None, status: int = 200) -> None:
    """Append the row of a change ``tx`` makes: ``action`` (``principal.create``, …) on the
    ``kind`` object ``target``, named ``target_name`` or else as the principal
    ``target_principal`` is named at this point of ``tx``; ``detail`` names and uuids only.
    The names are the insert's own lookups (no read: no round trip on PostgreSQL)."""
    actor = _actor()
    tx.w.add_audit(_row(actor, action, kind, target, target_name, status, detail),
                   target_principal)


def refused(core: Core, action: str, kind: str, target: str | None, status: int) -> None:
    """Append the row of a refused change (a write of its own: the change wrote nothing)."""
    actor = _actor()
    with core.raw_write() as w:
        w.add_audit(_row(actor, action, kind, target, None, status, None),
                    target if kind == "principal" else None)


def _time(at: float) -> str:
    return (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at))
            + f".{int(at % 1 * 1000):03d}Z")


def view(row: AuditRow) -> JsonObject:
    """A row as the API answers it (the Cluster Manager's audit entries' shape, with
    ``detail`` for what it has no ``cluster`` and ``reason`` for)."""
    return {"seq": row.seq, "time": _time(float(row.at)), "requestId": row.request_id,
            "principal": {"uuid": row.principal, "name": row.principal_name},
            "action": row.action,
            "target": {"kind": row.target_kind, "uuid": row.target, "name": row.target_name},
            "outcome": row.outcome, "status": row.status,
            "detail": _detail(row.detail)}


def _detail(stored: str | None) -> JsonValue:
    detail: JsonValue = json.loads(stored) if stored else None
    return detail


def page(core: Core, *, principal: str | None = None, target: str | None = None,
         since: float | None = None, before: int | None = None,
         limit: int = 100) -> tuple[list[JsonObject], int | None]:
    """Rows newest first matching every filter (see
    :meth:`~config_store._storage.Reader.audit_page`), at most ``limit``; and the ``seq``
    to pass as ``before`` for the next page (None: no more)."""
    rows = core.reader().audit_page(principal=principal, target=target, since=since,
                                            before=before, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    return [view(r) for r in rows], (rows[-1].seq if more and rows else None)


__all__ = ["OK", "REFUSED", "Actor", "acting", "grant_detail", "page", "record", "refused",
           "set_actor", "view"]
