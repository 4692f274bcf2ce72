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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._auth_api import principal_body
from ._paths import conditions, seg
from ._transport import strip_etag

_NO_BODY: Any = object()


@dataclass(frozen=True)
class BatchOp:
    """One operation: a method and ``/v2/...`` path, and optionally a JSON body,
    ``If-Match``/``If-None-Match`` headers and statuses accepted besides success."""

    method: str
    path: str
    body: Any = _NO_BODY
    headers: dict[str, str] = field(default_factory=dict)
    accept: tuple[int, ...] = ()

    def wire(self) -> dict[str, Any]:
        """The operation as ``POST /v2/batch`` takes it."""
        out: dict[str, Any] = {"method": self.method, "path": self.path}
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
    body: Any

    @classmethod
    def parse(cls, result: Any) -> BatchResult:
        """A result as the batch answer carries it."""
        if not isinstance(result, dict) or not isinstance(result.get("status"), int):
            raise ValueError(f"not a batch result: {result!r:.200}")
        etag = result.get("etag")
        return cls(result["status"], strip_etag(etag if isinstance(etag, str) else None),
                   result.get("body"))


def _accept(absent_ok: bool) -> tuple[int, ...]:
    return (404,) if absent_ok else ()


def _entry(app: str, obj: str) -> str:
    return f"/v2/app/{seg(app)}/object/{seg(obj)}"


def get_config(app: str, obj: str, *, absent_ok: bool = True) -> BatchOp:
    """Read an entry (its result's ``body``; a 404 when absent and ``absent_ok``)."""
    return BatchOp("GET", _entry(app, obj), accept=_accept(absent_ok))


def put_config(app: str, obj: str, value: Any, if_match: str | None = None,
               if_none_match: str | None = None) -> BatchOp:
    """Create or replace an entry (``if_none_match="*"``: only if absent)."""
    return BatchOp("PUT", _entry(app, obj), value, conditions(if_match, if_none_match))


def patch_config(app: str, obj: str, patch: Any, if_match: str | None = None) -> BatchOp:
    """Apply a JSON merge patch to an entry (created from ``{}`` if absent)."""
    return BatchOp("PATCH", _entry(app, obj), patch, conditions(if_match))


def delete_config(app: str, obj: str, *, absent_ok: bool = True,
                  if_match: str | None = None) -> BatchOp:
    """Delete an entry; already absent is fine when ``absent_ok`` (and no ``if_match``)."""
    return BatchOp("DELETE", _entry(app, obj), headers=conditions(if_match),
                   accept=_accept(absent_ok and if_match is None))


def create_object(klass: str, uuid: str | None = None, owner: str | None = None) -> BatchOp:
    """Create (or find, when ``uuid`` exists) an object of ``klass``."""
    body: dict[str, Any] = {"class": klass}
    if uuid is not None:
        body["uuid"] = uuid
    if owner is not None:
        body["owner"] = owner
    return BatchOp("POST", "/v2/object", body)


def delete_object(obj: str, *, absent_ok: bool = True) -> BatchOp:
    """Delete an object with its entries and memberships."""
    return BatchOp("DELETE", f"/v2/object/{seg(obj)}", accept=_accept(absent_ok))


def _relation(rel: str, klass: str, obj: str) -> str:
    return f"/v2/class/{seg(klass)}/direct/{rel}/{seg(obj)}"


def add_member(klass: str, obj: str) -> BatchOp:
    """Make ``obj`` a direct member of ``klass``."""
    return BatchOp("PUT", _relation("member", klass, obj))


def remove_member(klass: str, obj: str, *, absent_ok: bool = True) -> BatchOp:
    """Remove ``obj`` from the direct members of ``klass``."""
    return BatchOp("DELETE", _relation("member", klass, obj), accept=_accept(absent_ok))


def add_subclass(klass: str, sub: str) -> BatchOp:
    """Make ``sub`` a direct subclass of ``klass``."""
    return BatchOp("PUT", _relation("subclass", klass, sub))


def remove_subclass(klass: str, sub: str, *, absent_ok: bool = True) -> BatchOp:
    """Remove ``sub`` from the direct subclasses of ``klass``."""
    return BatchOp("DELETE", _relation("subclass", klass, sub), accept=_accept(absent_ok))


def create_principal(name: str, password: str | None = None, uuid: str | None = None,
                     klass: str | None = None, *, label: str | None = None,
                     groups: list[str] | None = None,
                     grants: list[dict[str, Any]] | None = None) -> BatchOp:
    """Create a principal with its label, groups and grants (the principal extension's
    one-request create; its result's ``body`` is ``{"uuid", "name"}``)."""
    return BatchOp("POST", "/v2/principal", principal_body(
        name, password, uuid, klass, label=label, groups=groups, grants=grants))


def delete_principal(principal: str, *, absent_ok: bool = True) -> BatchOp:
    """Delete a principal's credentials, tokens and identities."""
    return BatchOp("DELETE", f"/v2/principal/{seg(principal)}", accept=_accept(absent_ok))


__all__ = ["BatchOp", "BatchResult", "add_member", "add_subclass", "create_object",
           "create_principal", "delete_config", "delete_object", "delete_principal",
           "get_config", "patch_config", "put_config", "remove_member", "remove_subclass"]
