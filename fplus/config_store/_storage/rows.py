"""The rows storage hands to the domain, whatever the database."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ObjectRow:
    """A stored object."""

    uuid: str
    rank: int
    klass: str | None
    owner: str
    deleted: bool
    etag: str


@dataclass(frozen=True)
class LoginRow:
    """What checking a principal's password needs: its current hash and, during a graceful
    rotation, the previous hash and when that stops being accepted (epoch seconds)."""

    uuid: str
    password_hash: str | None
    previous_hash: str | None = None
    previous_until: float | None = None


@dataclass(frozen=True)
class GrantRow:
    """A stored grant (ACE)."""

    uuid: str
    principal: str
    permission: str
    target: str
    plural: bool
    object: str | None = None


@dataclass(frozen=True)
class TokenRow:
    """An issued Bearer token, by the SHA-256 digest of its text (the token itself is never
    stored): whose it is, the tag of the password hash it was obtained with, and the epoch
    second from which it is refused."""

    digest: str
    principal: str
    tag: str
    refused_from: float


@dataclass(frozen=True)
class Change:
    """One committed change as other replicas learn of it: ids, never bodies.

    ``kind`` is ``config`` (``a`` app, ``b`` object, ``etag`` the new etag or None when
    deleted), ``object`` (``a`` uuid), ``member`` / ``subclass`` (``a`` class, ``b`` the
    member or subclass), ``grant`` (``a`` grant uuid), ``principal``, ``identity`` or
    ``token`` (a token ended: ``a`` the principal).
    """

    kind: str
    a: str
    b: str = ""
    etag: str | None = None


@dataclass(frozen=True)
class AuditRow:
    """One change made through the Auth API (or a refusal of one), as the audit table keeps
    it: who, what, on what, how it ended, when and under which request id. ``detail`` is a
    JSON object of names and uuids only, never a password, hash, token or secret."""

    at: float
    request_id: str
    principal: str | None
    principal_name: str | None
    action: str
    target_kind: str
    target: str | None
    target_name: str | None
    outcome: str
    status: int
    detail: str | None = None
    seq: int = 0
    """Given by the database (counts up in commit order); 0 before it is written."""
