"""Helpers of the tests of the Auth routes as upstream ACS serves them (test_auth_*.py).

Each test cites the upstream file and function its status codes and body shapes come from
(``lib/api_v2.js`` for ``/v2``, ``lib/authz.js`` and ``lib/authn.js`` for the legacy routes,
``lib/loader.js``, ``lib/model.js`` and ``dump-schema.yaml`` for Auth dumps). Where ours
differs on purpose, the comment says "ours". Every refusal is followed by a read-back as
the root principal showing nothing was written.
"""

from __future__ import annotations

from typing import Any

from fplus.config_store import uuids
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
