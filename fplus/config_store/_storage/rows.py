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
