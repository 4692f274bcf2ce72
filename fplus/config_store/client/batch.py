"""Operations for :meth:`ConfigStoreClient.batch` (``POST /v2/batch``, our extension).

Each helper builds one operation, the request its single-call namesake on
:class:`~fplus.config_store.client.ConfigStoreClient` sends; ``absent_ok`` accepts a 404
as that call does. The batch runs them in order in one transaction, all or nothing::

    from fplus.config_store.client import batch

    results = cs.batch([
        batch.create_object(klass, uuid),
        batch.put_config(app, uuid, {"name": "x"}, if_none_match="*"),
        batch.add_member(group, uuid),
    ])
    etag = results[1].etag

A failed batch raises the error the failing call alone would (``PreconditionFailed``,
``NotFound``, ``Forbidden``, ...) with ``index`` naming the operation; nothing was written.

An in-memory stand-in for the client (a test's fake) runs a batch with :func:`replay`: each
operation remembers the single call it is (:attr:`BatchOp.call`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from fplus.jsontypes import JsonObject, JsonValue

from ._auth_api import principal_body, uuid_of
from ._paths import conditions, entry_path, identity_path, password_path, seg
from ._transport import strip_etag
from .errors import ConfigStoreError, NotFound

_NO_BODY: Final = object()


@dataclass(frozen=True)
class BatchOp:
    """One operation: a method and ``/v2/...`` path, and optionally a JSON body,
    ``If-Match``/``If-None-Match`` headers and statuses accepted besides success."""

    method: str
    path: str
    body: object = _NO_BODY
    headers: dict[str, str] = field(default_factory=dict)
    accept: tuple[int, ...] = ()
    call: tuple[str, tuple[object, ...], dict[str, object]] = field(
        default=("", (), {}), compare=False, repr=False)
    """The :class:`~fplus.config_store.client.ConfigStoreClient` method this operation is,
    with its arguments (keyword ones only when given): what :func:`replay` calls."""

    def wire(self) -> dict[str, object]:
        """The operation as ``POST /v2/batch`` takes it."""
        out: dict[str, object] = {"method": self.method, "path": self.path}
        if self.body is not _NO_BODY:
            out["body"] = self.body
        if self.headers:
            out["headers"] = dict(self.headers)
        if self.accept:
            out["accept"] = list(self.accept)
        return out


@dataclass(frozen=True)
class BatchResult:
    """What one operation answered: its status, ETag (unquoted; None if it gave none) and
    JSON body (None if it had none)."""

    status: int
    etag: str | None
    body: JsonValue

    @classmethod
    def parse(cls, result: JsonValue) -> BatchResult:
        """A result as the batch answer carries it."""
        status = result.get("status") if isinstance(result, dict) else None
        if not isinstance(result, dict) or not isinstance(status, int):
            raise ValueError(f"not a batch result: {result!r:.200}")
        etag = result.get("etag")
        return cls(status, strip_etag(etag if isinstance(etag, str) else None),
                   result.get("body"))

    @property
    def created(self) -> str:
        """The uuid a ``create_object`` or ``create_principal`` answered (as those calls
        read it: :class:`ConfigStoreError` if it carries none)."""
        return uuid_of(self.body, "batch create")


def _given(**kwargs: object) -> dict[str, object]:
    return {k: v for k, v in kwargs.items() if v is not None}


def _accept(absent_ok: bool) -> tuple[int, ...]:
    return (404,) if absent_ok else ()


def get_config(app: str, obj: str, *, absent_ok: bool = True) -> BatchOp:
    """Read an entry (its result's ``body``; a 404 when absent and ``absent_ok``)."""
    return BatchOp("GET", entry_path(app, obj), accept=_accept(absent_ok),
                   call=("get_config", (app, obj), {}))


def put_config(app: str, obj: str, value: object, if_match: str | None = None,
               if_none_match: str | None = None) -> BatchOp:
    """Create or replace an entry (``if_none_match="*"``: only if absent)."""
    return BatchOp("PUT", entry_path(app, obj), value, conditions(if_match, if_none_match),
                   call=("put_config", (app, obj, value),
                         _given(if_match=if_match, if_none_match=if_none_match)))


def patch_config(app: str, obj: str, patch: object, if_match: str | None = None) -> BatchOp:
    """Apply a JSON merge patch to an entry (created from ``{}`` if absent)."""
    if patch is None:  # as the single call: a null patch deletes the entry
        return delete_config(app, obj, if_match=if_match)
    return BatchOp("PATCH", entry_path(app, obj), patch, conditions(if_match),
                   call=("patch_config", (app, obj, patch), _given(if_match=if_match)))


def delete_config(app: str, obj: str, *, absent_ok: bool = True,
                  if_match: str | None = None) -> BatchOp:
    """Delete an entry; already absent is fine when ``absent_ok`` (and no ``if_match``)."""
    return BatchOp("DELETE", entry_path(app, obj), headers=conditions(if_match),
                   accept=_accept(absent_ok and if_match is None),
                   call=("delete_config", (app, obj), _given(if_match=if_match)))


def create_object(klass: str, uuid: str | None = None, owner: str | None = None) -> BatchOp:
    """Create (or find, when ``uuid`` exists) an object of ``klass``."""
    body: JsonObject = {"class": klass}
    if uuid is not None:
        body["uuid"] = uuid
    if owner is not None:
        body["owner"] = owner
    return BatchOp("POST", "/v2/object", body,
                   call=("create_object", (klass, uuid), _given(owner=owner)))


def delete_object(obj: str, *, absent_ok: bool = True) -> BatchOp:
    """Delete an object with its entries and memberships."""
    return BatchOp("DELETE", f"/v2/object/{seg(obj)}", accept=_accept(absent_ok),
                   call=("delete_object", (obj,), {}))


def _relation(rel: str, klass: str, obj: str) -> str:
    return f"/v2/class/{seg(klass)}/direct/{rel}/{seg(obj)}"


def add_member(klass: str, obj: str) -> BatchOp:
    """Make ``obj`` a direct member of ``klass``."""
    return BatchOp("PUT", _relation("member", klass, obj),
                   call=("add_member", (klass, obj), {}))


def remove_member(klass: str, obj: str, *, absent_ok: bool = True) -> BatchOp:
    """Remove ``obj`` from the direct members of ``klass``."""
    return BatchOp("DELETE", _relation("member", klass, obj), accept=_accept(absent_ok),
                   call=("remove_member", (klass, obj), {}))


def add_subclass(klass: str, sub: str) -> BatchOp:
    """Make ``sub`` a direct subclass of ``klass``."""
    return BatchOp("PUT", _relation("subclass", klass, sub),
                   call=("add_subclass", (klass, sub), {}))


def remove_subclass(klass: str, sub: str, *, absent_ok: bool = True) -> BatchOp:
    """Remove ``sub`` from the direct subclasses of ``klass``."""
    return BatchOp("DELETE", _relation("subclass", klass, sub), accept=_accept(absent_ok),
                   call=("remove_subclass", (klass, sub), {}))


def create_principal(name: str, password: str | None = None, uuid: str | None = None,
                     klass: str | None = None, *, label: str | None = None,
                     groups: list[str] | None = None,
                     grants: Sequence[Mapping[str, object]] | None = None) -> BatchOp:
    """Create a principal with its label, groups and grants (the principal extension's
    one-request create; its result's ``body`` is ``{"uuid", "name"}``)."""
    return BatchOp("POST", "/v2/principal", principal_body(
        name, password, uuid, klass, label=label, groups=groups, grants=grants),
        call=("create_principal", (name, password, uuid, klass),
              _given(label=label, groups=groups, grants=grants)))


def delete_principal(principal: str, *, absent_ok: bool = True) -> BatchOp:
    """Delete a principal's credentials, tokens and identities."""
    return BatchOp("DELETE", f"/v2/principal/{seg(principal)}", accept=_accept(absent_ok),
                   call=("delete_principal", (principal,), {}))


def find_principal(name: str) -> BatchOp:
    """Find the principal with Kerberos or login name ``name`` (its result's body is the
    uuid; a 404, accepted: none)."""
    return BatchOp("GET", identity_path(name), accept=(404,),
                   call=("find_principal", (name,), {}))


def generate_password(principal: str, *, previous_valid_for: float | None = None) -> BatchOp:
    """Give ``principal`` a new server-generated password (in its result's body, under
    ``password``); ``previous_valid_for`` as the single call takes it."""
    body = _NO_BODY if previous_valid_for is None else {"previousValidFor": previous_valid_for}
    return BatchOp("POST", password_path(principal), body,
                   call=("generate_password", (principal,),
                         _given(previous_valid_for=previous_valid_for)))


def replay(target: object, ops: Sequence[BatchOp]) -> list[BatchResult]:
    """Run ``ops`` as the single calls they are (:attr:`BatchOp.call`) on ``target``, an
    in-memory stand-in for the client, with the results the batch would give: a created
    object's or principal's uuid in ``body``, an entry read in ``body``, a write's ETag.
    The first call that raises a status the operation does not accept raises with
    ``index``; undoing the calls before it is the stand-in's own business (what the Config
    Store's one transaction does). Statuses are 200, 204 or the error's (not 201)."""
    results = []
    for index, op in enumerate(ops):
        name, args, kwargs = op.call
        if not name:
            raise ValueError(f"operation {index} ({op.method} {op.path}) names no call")
        try:
            value = getattr(target, name)(*args, **kwargs)
        except ConfigStoreError as exc:
            if exc.status not in op.accept:
                exc.index = index
                raise
            results.append(BatchResult(exc.status, None, exc.body))
            continue
        if name in ("get_config", "find_principal") and value is None:
            if 404 not in op.accept:
                error = NotFound(404, None, f"operation {index}: not found")
                error.index = index
                raise error
            results.append(BatchResult(404, None, None))
        elif name in ("get_config", "find_principal"):
            results.append(BatchResult(200, None, value))
        elif name == "generate_password":
            results.append(BatchResult(200, None, {"password": value}))
        elif name in ("create_object", "create_principal"):
            body = {"uuid": value} | ({"name": args[0]} if name == "create_principal" else {})
            results.append(BatchResult(200, None, body))
        else:
            etag = value if isinstance(value, str) else None
            results.append(BatchResult(204, etag, None))
    return results


__all__ = ["BatchOp", "BatchResult", "add_member", "add_subclass", "create_object",
           "create_principal", "delete_config", "delete_object", "delete_principal",
           "find_principal", "generate_password", "get_config", "patch_config", "put_config",
           "remove_member", "remove_subclass", "replay"]
