"""Helpers of the upstream Auth tests (test_auth_*.py)."""

from __future__ import annotations

from typing import Any

from config_store import uuids
from harness.servers import Api
from tests.config_store.actors import grants_of, unique

P = uuids.ConfigDBPerm
A = uuids.AuthPerm
C = uuids.Class
S = uuids.Special
NULL = uuids.NULL
AUTH = uuids.Service.Auth
REALM = "FACTORYPLUS.EXAMPLE"


def new_upn() -> str:
    """A fresh Kerberos principal name (``name@REALM``, upstream lib/validate.js KRB_rx)."""
    return f"{unique('krb')}@{REALM}"


def set_kerberos(admin: Api, principal: str, upn: str) -> None:
    r = admin.put(f"/v2/principal/{principal}/kerberos", json=upn)
    assert r.status_code == 204, r.text


def kerberos_of(admin: Api, principal: str) -> str | None:
    """The principal's Kerberos name, or None (read as the root principal)."""
    r = admin.get(f"/v2/principal/{principal}/kerberos")
    assert r.status_code in (200, 404), r.text
    return r.json() if r.status_code == 200 else None


def grant_triples(admin: Api, principal: str) -> set[tuple[str, str, bool]]:
    """``(permission, target, plural)`` of the grants naming ``principal``."""
    out = set()
    for g in grants_of(admin, principal):
        body = admin.get(f"/v2/grant/{g}").json()
        out.add((body["permission"], body["target"], body["plural"]))
    return out


def acl_pairs(r: Any) -> set[tuple[str, str]]:
    """``(permission, target)`` of an ACL response (200 asserted)."""
    assert r.status_code == 200, r.text
    return {(e["permission"], e["target"]) for e in r.json()}
