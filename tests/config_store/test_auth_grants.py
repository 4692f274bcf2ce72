"""The Auth ACL and grant routes, as upstream ACS serves them (acs-auth), over real HTTP.

Conventions (upstream citations, read-backs): :mod:`tests.config_store.auth_upstream`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from harness.servers import Api
from tests.config_store.actors import Actor, grants_of, make_principal
from tests.config_store.auth_upstream import (
    NULL,
    REALM,
    A,
    C,
    P,
    acl_pairs,
    grant_triples,
    new_upn,
    set_kerberos,
)
from tests.conftest import grant, make_class, make_object


# -- ACLs -----------------------------------------------------------------------------------
def test_acl_status_codes(actor: Actor) -> None:
    # lib/api_v2.js get_acl (410 malformed) and _get_acl: 404 for no ACL (a non-principal)
    # before the ReadACL check, 403 if the caller holds ReadACL on nothing, else the
    # entries whose permission it may read
    admin = actor.admin
    uid, _ = make_principal(admin)
    grant(admin, uid, P.ReadApp, NULL)
    grant(admin, uid, P.WriteApp, NULL)
    device = make_object(admin, C.Device)
    api = actor.basic()
    assert api.get("/v2/acl/not-a-uuid").status_code == 410
    assert api.get(f"/v2/acl/{device}").status_code == 404
    assert api.get(f"/v2/acl/{uuid.uuid4()}").status_code == 404
    assert api.get(f"/v2/acl/{uid}").status_code == 403
    actor.grant(A.ReadKerberos, NULL)
    actor.grant(A.WriteACL, NULL)
    assert api.get(f"/v2/acl/{uid}").status_code == 403  # WriteACL is not ReadACL
    actor.grant(A.ReadACL, P.ReadApp)
    assert acl_pairs(api.get(f"/v2/acl/{uid}")) == {(P.ReadApp, NULL)}
    assert acl_pairs(admin.get(f"/v2/acl/{uid}")) == {(P.ReadApp, NULL), (P.WriteApp, NULL)}


def test_acl_by_kerberos_name(actor: Actor) -> None:
    # lib/api_v2.js get_krb_acl: "Don't return 404, we haven't checked ACLs": [] for an
    # unknown name; else _get_acl (403 without ReadACL on anything); a name failing
    # valid_krb is 410 upstream, ours a login name
    admin = actor.admin
    uid, name = make_principal(admin)
    upn = new_upn()
    set_kerberos(admin, uid, upn)
    grant(admin, uid, P.ReadApp, NULL)
    api = actor.basic()
    for who in (api, admin):
        for unknown in (new_upn(), f"no-{name}"):
            r = who.get(f"/v2/acl/kerberos/{unknown}")
            assert r.status_code == 200 and r.json() == []
    assert acl_pairs(admin.get(f"/v2/acl/kerberos/{name}")) == {(P.ReadApp, NULL)}
    actor.grant(A.ReadACL, NULL)
    # ours: [] for a name the caller may not resolve (no ReadKerberos on it)
    r = api.get(f"/v2/acl/kerberos/{upn}")
    assert r.status_code == 200 and r.json() == []
    actor.grant(A.ReadKerberos, uid)
    assert acl_pairs(api.get(f"/v2/acl/kerberos/{upn}")) == {(P.ReadApp, NULL)}
    assert acl_pairs(api.get(f"/v2/acl/kerberos/{name}@{REALM}")) == {(P.ReadApp, NULL)}
    assert acl_pairs(api.get(f"/v2/acl/kerberos/{name}")) == {(P.ReadApp, NULL)}
    actor.cleanup()
    actor.grant(A.ReadKerberos, uid)
    assert api.get(f"/v2/acl/kerberos/{upn}").status_code == 403  # no ReadACL at all


# -- grants ---------------------------------------------------------------------------------
def test_grant_list_is_what_the_caller_may_change(actor: Actor) -> None:
    # lib/api_v2.js grant_list: 403 without WriteACL on anything, else the grants the caller
    # holds WriteACL on (upstream filters the grant uuids with the permission check, ours
    # each grant's permission, which is what "may change" means: lib/model.js grant_find)
    admin = actor.admin
    uid, _ = make_principal(admin)
    readable = grant(admin, uid, P.ReadApp, NULL)
    writable = grant(admin, uid, P.WriteApp, NULL)
    api = actor.basic()
    assert api.get("/v2/grant").status_code == 403
    actor.grant(A.ReadACL, NULL)
    assert api.get("/v2/grant").status_code == 403
    actor.grant(A.WriteACL, P.ReadApp)
    r = api.get("/v2/grant")
    assert r.status_code == 200, r.text
    listed = r.json()
    assert readable in listed and writable not in listed
    every_readapp = admin.post("/v2/grant/find", json={"permission": P.ReadApp}).json()
    assert sorted(listed) == sorted(every_readapp)
    everything = admin.get("/v2/grant").json()
    assert {readable, writable} <= set(everything) and everything == sorted(everything)


def test_grant_put_replaces_keeping_the_uuid(admin: Api) -> None:
    # lib/api_v2.js grant_put → lib/model.js grant_request: grant_update in place, 204
    uid, _ = make_principal(admin)
    first, second = make_object(admin, C.App), make_object(admin, C.App)
    apps = make_class(admin)
    members = {make_object(admin, apps) for _ in range(2)}
    g = grant(admin, uid, P.ReadApp, first)
    assert acl_pairs(admin.get(f"/v2/acl/{uid}")) == {(P.ReadApp, first)}

    body = {"principal": uid, "permission": P.WriteApp, "target": second, "plural": False}
    r = admin.put(f"/v2/grant/{g}", json=body)
    assert r.status_code == 204, r.text
    assert admin.get(f"/v2/grant/{g}").json() == body | {"uuid": g}
    assert grants_of(admin, uid) == [g]
    assert acl_pairs(admin.get(f"/v2/acl/{uid}")) == {(P.WriteApp, second)}

    r = admin.put(f"/v2/grant/{g}", json=body | {"target": apps, "plural": True})
    assert r.status_code == 204, r.text
    assert acl_pairs(admin.get(f"/v2/acl/{uid}")) == {(P.WriteApp, m) for m in members}

    moved_to, _ = make_principal(admin)
    r = admin.put(f"/v2/grant/{g}", json=body | {"principal": moved_to})
    assert r.status_code == 204, r.text
    assert grants_of(admin, uid) == [] and grants_of(admin, moved_to) == [g]
    assert admin.get(f"/v2/acl/{uid}").json() == []


BAD_GRANT_BODIES: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("no-target", lambda g: {k: v for k, v in g.items() if k != "target"}),
    ("principal-not-uuid", lambda g: g | {"principal": "alice"}),
    ("plural-string", lambda g: g | {"plural": "true"}),
    ("not-an-object", lambda g: [g]),
]


@pytest.mark.parametrize("mutate", [m for _, m in BAD_GRANT_BODIES],
                         ids=[n for n, _ in BAD_GRANT_BODIES])
def test_grant_put_rejects_a_bad_body(admin: Api,
                                      mutate: Callable[[dict[str, Any]], Any]) -> None:
    # lib/api_v2.js grant_put: `if (grant && !valid_grant(grant)) fail(422)`
    uid, _ = make_principal(admin)
    g = grant(admin, uid, P.ReadApp, NULL)
    body = {"principal": uid, "permission": P.WriteApp, "target": NULL, "plural": False}
    r = admin.put(f"/v2/grant/{g}", json=mutate(body))
    assert r.status_code == 422, r.text
    assert grant_triples(admin, uid) == {(P.ReadApp, NULL, False)}


def test_grant_put_unknown_and_malformed(admin: Api) -> None:
    # lib/queries.js grant_find: 404; lib/api_v2.js grant_put: 410 for a malformed uuid
    uid, _ = make_principal(admin)
    body = {"principal": uid, "permission": P.ReadApp, "target": NULL, "plural": False}
    unknown = str(uuid.uuid4())
    assert admin.put(f"/v2/grant/{unknown}", json=body).status_code == 404
    assert admin.get(f"/v2/grant/{unknown}").status_code == 404
    assert admin.put("/v2/grant/not-a-uuid", json=body).status_code == 410
    assert grants_of(admin, uid) == []


@dataclass(frozen=True)
class PutCase:
    name: str
    write_acl: tuple[str, ...]  # permissions the actor holds WriteACL on
    status: int


PUT_CASES = [
    PutCase("ungranted", (), 403),
    PutCase("writeacl-on-the-old-permission-only", (P.ReadApp,), 403),
    PutCase("writeacl-on-the-new-permission-only", (P.WriteApp,), 403),
    PutCase("writeacl-on-both", (P.ReadApp, P.WriteApp), 204),
]


@pytest.mark.parametrize("case", PUT_CASES, ids=[c.name for c in PUT_CASES])
def test_grant_put_needs_writeacl_on_both_permissions(actor: Actor, case: PutCase) -> None:
    # lib/model.js grant_request: "changing the perm requires ManageACL on both perms" (the
    # new one before the transaction, the old one in grant_find)
    uid, _ = make_principal(actor.admin)
    g = grant(actor.admin, uid, P.ReadApp, NULL)
    actor.grant(P.ReadApp, NULL)  # the grant rule (ours): may grant what it holds
    actor.grant(P.WriteApp, NULL)
    for perm in case.write_acl:
        actor.grant(A.WriteACL, perm)
    body = {"principal": uid, "permission": P.WriteApp, "target": NULL, "plural": False}
    r = actor.basic().put(f"/v2/grant/{g}", json=body)
    assert r.status_code == case.status, r.text
    want = (P.WriteApp if case.status == 204 else P.ReadApp, NULL, False)
    assert grant_triples(actor.admin, uid) == {want}
    assert grants_of(actor.admin, uid) == [g]


def test_grant_put_onto_an_existing_grant_is_409(admin: Api) -> None:
    # upstream's ace table is unique (principal, permission, target, plural) (sql/v3.sql)
    uid, _ = make_principal(admin)
    app1, app2 = make_object(admin, C.App), make_object(admin, C.App)
    first, second = grant(admin, uid, P.ReadApp, app1), grant(admin, uid, P.ReadApp, app2)
    body = {"principal": uid, "permission": P.ReadApp, "target": app2, "plural": False}
    r = admin.put(f"/v2/grant/{first}", json=body)
    assert r.status_code == 409, r.text
    assert second in r.json()["error"]
    assert grant_triples(admin, uid) == {(P.ReadApp, app1, False), (P.ReadApp, app2, False)}


def test_grant_put_follows_the_grant_rule(actor: Actor) -> None:
    # ours: a replacement is a new grant, so the grant rule applies (tests/config_store/
    # test_grant_rule.py): WriteACL alone does not let one grant what one does not hold
    uid, _ = make_principal(actor.admin)
    g = grant(actor.admin, uid, P.ReadApp, NULL)
    actor.grant(A.WriteACL, NULL)
    body = {"principal": uid, "permission": P.WriteApp, "target": NULL, "plural": False}
    assert actor.basic().put(f"/v2/grant/{g}", json=body).status_code == 403
    assert grant_triples(actor.admin, uid) == {(P.ReadApp, NULL, False)}


@pytest.mark.parametrize(("held", "ok"), [
    ((), False), ((A.ReadACL,), True), ((A.WriteACL,), True), ((A.ReadKerberos,), False)],
    ids=["ungranted", "readacl", "writeacl", "readkerberos"])
def test_grant_get_and_find(actor: Actor, held: tuple[str, ...], ok: bool) -> None:
    # lib/api_v2.js grant_get / grant_find need WriteACL on the grant's permission; ours
    # accepts ReadACL as well
    uid, _ = make_principal(actor.admin)
    g = grant(actor.admin, uid, P.ReadApp, NULL)
    for perm in held:
        actor.grant(perm, P.ReadApp)
    api = actor.basic()
    r = api.get(f"/v2/grant/{g}")
    assert r.status_code == (200 if ok else 403), r.text
    if ok:
        assert r.json() == {"uuid": g, "principal": uid, "permission": P.ReadApp,
                            "target": NULL, "plural": False}
    found = api.post("/v2/grant/find", json={"principal": uid})
    if {A.ReadACL, A.WriteACL} & set(held):  # holding either on anything: a filtered list
        assert found.status_code == 200 and found.json() == ([g] if ok else []), found.text
    else:  # grant_find: 403 to a caller holding neither on anything
        assert found.status_code == 403, found.text
