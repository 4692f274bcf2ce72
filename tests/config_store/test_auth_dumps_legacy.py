"""Auth dumps and the legacy Auth routes, as upstream ACS serves them (acs-auth), over real HTTP.

Conventions (upstream citations, read-backs): :mod:`tests.config_store.auth_upstream`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harness.servers import Api
from tests.config_store.actors import Actor, bearer, grants_of, make_principal
from tests.config_store.auth_upstream import (
    AUTH,
    NULL,
    A,
    C,
    P,
    acl_pairs,
    grant_triples,
    kerberos_of,
    new_upn,
    set_kerberos,
)
from tests.conftest import grant, make_class, make_object, make_user


# -- Auth dumps -----------------------------------------------------------------------------
def auth_dump(**parts: Any) -> dict[str, Any]:
    """An Auth dump (upstream dump-schema.yaml, version 2)."""
    return {"service": AUTH, "version": 2, **parts}


def test_auth_dump_loads_identities_and_grants(admin: Api) -> None:
    # lib/loader.js load: null targets are the wildcard, not plural; "both" is a plural and
    # a singular grant; lib/model.js dump_request: 204; entirely duplicate records are
    # ignored, so a second identical load is 204 and changes nothing
    first, _ = make_principal(admin)
    second, _ = make_principal(admin)
    app, apps = make_object(admin, C.App), make_class(admin)
    member = make_object(admin, apps)
    upn = new_upn()
    dump = auth_dump(
        identities={first: {"kerberos": upn}, second: {}},
        grants={first: {P.ReadApp: None, P.WriteApp: {app: "both"}, P.ListObj: {apps: True}},
                second: {P.ReadApp: {app: False}}})
    r = admin.post("/load", json=dump)
    assert r.status_code == 204, r.text
    assert kerberos_of(admin, first) == upn and kerberos_of(admin, second) is None
    assert admin.get(f"/v2/identity/kerberos/{upn}").json() == first
    assert grant_triples(admin, first) == {(P.ReadApp, NULL, False), (P.WriteApp, app, True),
                                           (P.WriteApp, app, False), (P.ListObj, apps, True)}
    assert grant_triples(admin, second) == {(P.ReadApp, app, False)}
    assert acl_pairs(admin.get(f"/v2/acl/{first}")) == {
        (P.ReadApp, NULL), (P.WriteApp, app), (P.ListObj, member)}

    before = {p: sorted(grants_of(admin, p)) for p in (first, second)}
    again = admin.post("/load", json=dump)
    assert again.status_code == 204, again.text
    assert {p: sorted(grants_of(admin, p)) for p in (first, second)} == before
    assert kerberos_of(admin, first) == upn
    assert admin.post("/load", json=auth_dump()).status_code == 204  # nothing to load


BAD_DUMPS: list[tuple[str, Callable[[str, str], Any]]] = [
    ("kerberos-without-realm", lambda p, u: auth_dump(identities={p: {"kerberos": "bare"}})),
    ("kerberos-not-string", lambda p, u: auth_dump(identities={p: {"kerberos": 5}})),
    ("identity-extra-kind", lambda p, u: auth_dump(identities={p: {"kerberos": u,
                                                                   "login": "x"}})),
    ("version-1", lambda p, u: {"service": AUTH, "version": 1,
                                "identities": {p: {"kerberos": u}}}),
    ("no-version", lambda p, u: {"service": AUTH, "identities": {p: {"kerberos": u}}}),
    ("extra-key", lambda p, u: auth_dump(identities={p: {"kerberos": u}}, objects={})),
    ("principal-not-uuid", lambda p, u: auth_dump(identities={p: {"kerberos": u}},
                                                  grants={"alice": {P.ReadApp: None}})),
    ("permission-not-uuid", lambda p, u: auth_dump(identities={p: {"kerberos": u}},
                                                   grants={p: {"ReadApp": None}})),
    ("plural-not-boolean", lambda p, u: auth_dump(identities={p: {"kerberos": u}},
                                                  grants={p: {P.ReadApp: {NULL: "yes"}}})),
    ("targets-a-list", lambda p, u: auth_dump(identities={p: {"kerberos": u}},
                                              grants={p: {P.ReadApp: [NULL]}})),
]


@pytest.mark.parametrize("make", [m for _, m in BAD_DUMPS], ids=[n for n, _ in BAD_DUMPS])
def test_auth_dump_rejects_invalid(admin: Api, make: Callable[[str, str], Any]) -> None:
    # lib/loader.js load: `if (!dump_schema(dump)) req.fail(422, ...)` (dump-schema.yaml);
    # ours: a name without @REALM is 422 as there is no default realm to append
    uid, _ = make_principal(admin)
    upn = new_upn()
    r = admin.post("/load", json=make(uid, upn))
    assert r.status_code == 422, r.text
    assert kerberos_of(admin, uid) is None and grants_of(admin, uid) == []
    assert admin.get(f"/v2/identity/kerberos/{upn}").status_code == 404


def test_auth_dump_takes_uuids_in_any_case(admin: Api) -> None:
    # ours: as every other body here, UUIDs in any case (stored lower-case)
    uid, _ = make_principal(admin)
    upn = new_upn()
    dump = {"service": AUTH.upper(), "version": 2,
            "identities": {uid.upper(): {"kerberos": upn}},
            "grants": {uid.upper(): {P.ReadApp.upper(): None}}}
    assert admin.post("/load", json=dump).status_code == 204
    assert kerberos_of(admin, uid) == upn
    assert grant_triples(admin, uid) == {(P.ReadApp, NULL, False)}


def test_auth_dump_identity_clash_is_409_and_writes_nothing(admin: Api) -> None:
    # lib/model.js dump_request: unique violation in dump_load_krbs → 409, in the one
    # transaction with the grants
    holder, other, third = (make_principal(admin)[0] for _ in range(3))
    held = new_upn()
    set_kerberos(admin, holder, held)
    fresh = new_upn()
    clashes = [
        auth_dump(identities={other: {"kerberos": held}}, grants={other: {P.ReadApp: None}}),
        auth_dump(identities={other: {"kerberos": fresh}, third: {"kerberos": fresh}},
                  grants={third: {P.ReadApp: None}}),
        auth_dump(identities={holder: {"kerberos": fresh}},  # holder already has a name
                  grants={other: {P.ReadApp: None}}),
    ]
    for dump in clashes:
        r = admin.post("/load", json=dump)
        assert r.status_code == 409, r.text
        assert kerberos_of(admin, holder) == held
        assert kerberos_of(admin, other) is None and kerberos_of(admin, third) is None
        assert grants_of(admin, other) == [] and grants_of(admin, third) == []
        assert admin.get(f"/v2/identity/kerberos/{fresh}").status_code == 404


def test_auth_dump_needs_permission_for_every_record(actor: Actor) -> None:
    # lib/model.js dump_request: 403 unless every identity and every grant is permitted,
    # before anything is written (ours: WriteKerberos per identity, and WriteACL plus the
    # grant rule per grant, as POST /v2/grant)
    admin = actor.admin
    mine, theirs = make_principal(admin)[0], make_principal(admin)[0]
    actor.grant(A.WriteKerberos, mine)
    actor.grant(A.WriteACL, P.ReadApp)
    actor.grant(P.ReadApp, NULL)
    actor.grant(A.WriteACL, P.WriteApp)  # but it does not hold WriteApp: the grant rule
    api = actor.basic()
    upn = new_upn()
    refused = [
        auth_dump(identities={mine: {"kerberos": upn}}, grants={mine: {P.ListObj: None}}),
        auth_dump(identities={mine: {"kerberos": upn}}, grants={mine: {P.WriteApp: None}}),
        auth_dump(identities={theirs: {"kerberos": upn}}, grants={mine: {P.ReadApp: None}}),
        auth_dump(identities={mine: {"kerberos": upn}, theirs: {"kerberos": new_upn()}}),
    ]
    for dump in refused:
        r = api.post("/load", json=dump)
        assert r.status_code == 403, r.text
        for who in (mine, theirs):
            assert kerberos_of(admin, who) is None and grants_of(admin, who) == []
    ok = auth_dump(identities={mine: {"kerberos": upn}}, grants={theirs: {P.ReadApp: None}})
    r = api.post("/load", json=ok)
    assert r.status_code == 204, r.text
    assert kerberos_of(admin, mine) == upn
    assert grant_triples(admin, theirs) == {(P.ReadApp, NULL, False)}


# -- legacy routes --------------------------------------------------------------------------
def test_legacy_acl(admin: Api) -> None:
    # lib/authz.js get_acl: `booleans[by-uuid]` (lib/validate.js; absent: false) else 400;
    # principal checked as a uuid or a UPN and permission as a uuid, else 410; then the v2
    # route; the permission is "accepted for compatibility but ignored"
    uid, _ = make_principal(admin)
    upn = new_upn()
    set_kerberos(admin, uid, upn)
    grant(admin, uid, P.ReadApp, NULL)
    grant(admin, uid, P.WriteApp, NULL)
    want = {(P.ReadApp, NULL), (P.WriteApp, NULL)}

    def legacy(**params: str) -> Any:
        return admin.get("/authz/acl", params=params)

    for flag in ("true", "1", "on", "yes"):
        assert acl_pairs(legacy(principal=uid, permission=P.ReadApp, **{"by-uuid": flag})
                         ) == want
    for flag in ("false", "0", "off", "no"):
        assert acl_pairs(legacy(principal=upn, permission=P.ReadApp, **{"by-uuid": flag})
                         ) == want
    assert acl_pairs(legacy(principal=upn, permission=P.WriteApp)) == want
    unknown = legacy(principal=new_upn(), permission=P.ReadApp)
    assert unknown.status_code == 200 and unknown.json() == []
    for flag in ("maybe", "", "TRUE"):  # lib/validate.js booleans: exact keys, no empty one
        assert legacy(principal=uid, permission=P.ReadApp, **{"by-uuid": flag}
                      ).status_code == 400, flag
    for params in ({"principal": uid, "permission": P.ReadApp},  # a uuid is no UPN
                   {"principal": upn, "permission": P.ReadApp, "by-uuid": "true"},
                   {"principal": "bare", "permission": P.ReadApp},
                   {"principal": upn},
                   {"principal": upn, "permission": "ReadApp"},
                   {"permission": P.ReadApp, "by-uuid": "true"}):
        assert legacy(**params).status_code == 410, params


def test_legacy_acl_is_the_v2_acl_for_any_caller(actor: Actor) -> None:
    admin = actor.admin
    uid, _ = make_principal(admin)
    device = make_object(admin, C.Device)
    api = actor.basic()
    params = {"principal": uid, "permission": P.ReadApp, "by-uuid": "true"}
    assert api.get("/authz/acl", params=params).status_code == 403
    assert api.get("/authz/acl", params=params | {"principal": device}).status_code == 404


def test_legacy_principal_find(actor: Actor) -> None:
    # lib/authz.js principal_find: forwards to /v2/whoami/uuid or /v2/identity/kerberos/:k
    # (so, ours, a name without @REALM is a login name, where upstream answers 410)
    admin = actor.admin
    uid, name = make_principal(admin)
    upn = new_upn()
    set_kerberos(admin, uid, upn)
    api = actor.basic()
    assert api.get("/authz/principal/find").json() == actor.uuid
    assert api.get("/authz/principal/find", params={"kerberos": upn}).status_code == 403
    actor.grant(A.ReadKerberos, NULL)
    r = api.get("/authz/principal/find", params={"kerberos": upn})
    assert r.status_code == 200 and r.json() == uid
    assert api.get("/authz/principal/find", params={"kerberos": new_upn()}).status_code == 404
    assert api.get("/authz/principal/find", params={"kerberos": name}).json() == uid
    r = api.get("/authz/principal/find", params={"kerberos": f"no-{name}"})
    assert r.status_code == 404


def test_legacy_principal_get(admin: Api) -> None:
    # lib/authz.js principal_get: {uuid, kerberos}; one's own without ReadKrb (the "legacy
    # exception"), another's needs ReadKrb on it (403 before 404); 404 without a Kerberos
    # identity; 410 for a malformed uuid
    me, api = make_user(admin)
    mine = new_upn()
    set_kerberos(admin, me, mine)
    other, _ = make_principal(admin)
    theirs = new_upn()
    set_kerberos(admin, other, theirs)
    bare, _ = make_principal(admin)
    assert api.get(f"/authz/principal/{me}").json() == {"uuid": me, "kerberos": mine}
    assert api.get(f"/authz/principal/{other}").status_code == 403
    assert api.get(f"/authz/principal/{bare}").status_code == 403
    grant(admin, me, A.ReadKerberos, other)
    assert api.get(f"/authz/principal/{other}").json() == {"uuid": other, "kerberos": theirs}
    grant(admin, me, A.ReadKerberos, bare)
    assert api.get(f"/authz/principal/{bare}").status_code == 404
    assert admin.get(f"/authz/principal/{bare}").status_code == 404
    assert api.get("/authz/principal/not-a-uuid").status_code == 410


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/authz/principal"), ("POST", "/authz/principal"), ("GET", "/authz/ace"),
    ("POST", "/authz/ace"), ("GET", "/authz/effective"), ("GET", "/authz/effective/{p}"),
    ("DELETE", "/authz/principal/{p}"), ("PUT", "/authz/group/{g}/{p}"),
])
def test_legacy_removed_routes_are_gone(actor: Actor, method: str, path: str) -> None:
    # lib/authz.js setup_routes: "These are all removed." → `gone` (410), for anyone
    admin = actor.admin
    uid, name = make_principal(admin)
    url = path.format(p=uid, g=make_class(admin))
    for who in (admin, actor.basic()):
        assert who.request(method, url).status_code == 410
    assert admin.get(f"/v2/principal/{uid}").json() == {"login": name, "uuid": uid}


def test_legacy_groups_need_manage_group_on_the_wildcard(actor: Actor) -> None:
    # lib/authz.js group_all / group_get / group_delete: `check_targ(ManageGroup, false)`
    # then `tok(Special.Wildcard)`, else 403; the old groups are empty here
    group, member = make_class(actor.admin), make_principal(actor.admin)[0]
    api = actor.basic()
    reads = ["/authz/group", "/authz/group/all", f"/authz/group/{group}"]

    def refused() -> None:
        for path in reads:
            assert api.get(path).status_code == 403, path
        assert api.delete(f"/authz/group/{group}/{member}").status_code == 403

    refused()
    actor.grant(A.ManageGroup, group)
    refused()
    actor.grant(A.ManageGroup, C.Principal, plural=True)
    refused()
    actor.grant(A.ManageGroup, NULL)
    for who in (api, actor.admin):
        for path in reads:
            r = who.get(path)
            assert r.status_code == 200 and r.json() == [], path
        assert who.delete(f"/authz/group/{group}/{member}").status_code == 204


def test_legacy_authenticate(admin: Api, anon: Api) -> None:
    # lib/authn.js authenticate: `api.all`, {"ok": true} and X-Auth-Principal (upstream:
    # the authenticated UPN; ours its Kerberos name, else its login name)
    uid, api = make_user(admin)
    assert api.auth is not None
    for method in ("GET", "POST", "PUT", "DELETE", "PATCH"):
        r = api.request(method, "/authn/authenticate")
        assert r.status_code == 200 and r.json() == {"ok": True}, method
        assert r.headers["X-Auth-Principal"] == api.auth[0]
    upn = new_upn()
    set_kerberos(admin, uid, upn)
    token = api.post("/token").json()["token"]
    for session in (api, bearer(admin.base, token)):
        r = session.post("/authn/authenticate")
        assert r.status_code == 200 and r.headers["X-Auth-Principal"] == upn
    r = anon.get("/authn/authenticate")
    assert r.status_code == 401 and "X-Auth-Principal" not in r.headers
    wrong = Api(admin.base, (api.auth[0], api.auth[1] + "x")).get("/authn/authenticate")
    assert wrong.status_code == 401 and "X-Auth-Principal" not in wrong.headers
