"""The Auth identity routes (whoami, principals, identities, groups), as upstream ACS
serves them (acs-auth), over real HTTP.

Conventions (upstream citations, read-backs): :mod:`tests.config_store.auth_upstream`.
"""

from __future__ import annotations

import uuid

import pytest

from harness.servers import Api
from tests.config_store.actors import Actor, add_member, bearer, make_principal
from tests.config_store.auth_upstream import (
    NULL,
    REALM,
    A,
    C,
    S,
    kerberos_of,
    new_upn,
    set_kerberos,
)
from tests.conftest import make_class, make_object, make_user


# -- whoami ---------------------------------------------------------------------------------
def test_whoami_shape_needs_no_permission(admin: Api) -> None:
    # lib/api_v2.js id_whoami: `_id_get_all` as root, {<kind>: <name>, ..., uuid}; "There
    # is no auth check here"
    uid, api = make_user(admin)
    assert api.auth is not None
    name = api.auth[0]
    assert api.get("/v2/whoami").json() == {"login": name, "uuid": uid}
    upn = new_upn()
    set_kerberos(admin, uid, upn)
    for session in (api, bearer(admin.base, api.post("/token").json()["token"])):
        r = session.get("/v2/whoami")
        assert r.status_code == 200, r.text
        assert r.json() == {"kerberos": upn, "login": name, "uuid": uid}
        assert session.get("/v2/whoami/uuid").json() == uid  # id_whoami_uuid: a JSON string
        # ours: the old shape on request
        assert session.get("/v2/whoami?detail=true").json() == {"uuid": uid, "name": name,
                                                                "root": False}


# -- principals -----------------------------------------------------------------------------
def test_principal_list_is_sorted_uuids(admin: Api) -> None:
    # lib/api_v2.js id_list: the identities' uuids, uniq'd (Response.toExpress: an array)
    mine = [make_principal(admin)[0] for _ in range(2)]
    r = admin.get("/v2/principal")
    assert r.status_code == 200, r.text
    listed = r.json()
    assert set(mine) <= set(listed)
    assert all(isinstance(u, str) for u in listed)
    assert listed == sorted(set(listed))
    # ours: [{uuid, name}] with ?detail=true
    detailed = admin.get("/v2/principal?detail=true").json()
    assert {d["uuid"] for d in detailed} >= set(mine)
    assert all(set(d) == {"uuid", "name"} for d in detailed)


def test_principal_list_needs_readkerberos_on_the_wildcard(actor: Actor) -> None:
    # lib/dataflow.js track_identities: `permitted(upn, ReadKrb, false)`: 403 without it
    api = actor.basic()
    assert api.get("/v2/principal").status_code == 403
    actor.grant(A.ReadKerberos, S.Self)
    assert api.get("/v2/principal").status_code == 403  # ours: only the wildcard lists all
    actor.grant(A.WriteKerberos, NULL)
    assert api.get("/v2/principal").status_code == 403
    actor.grant(A.ReadKerberos, NULL)
    assert actor.uuid in api.get("/v2/principal").json()


def test_get_principal_shapes(admin: Api) -> None:
    # lib/api_v2.js _id_get_all: Object.fromEntries(ids.map(i => [i.kind, i.name])) + uuid;
    # an empty result is 404 (track_identities: `res.filter(ids => ids.length)`); an
    # invalid uuid is 410 (find_identities: `orElse(Response.of(410))`)
    uid, name = make_principal(admin)
    assert admin.get(f"/v2/principal/{uid}").json() == {"login": name, "uuid": uid}
    upn = new_upn()
    set_kerberos(admin, uid, upn)
    r = admin.get(f"/v2/principal/{uid}")
    assert r.status_code == 200 and r.json() == {"kerberos": upn, "login": name, "uuid": uid}
    # ours: {uuid, name}
    assert admin.get(f"/v2/principal/{uid}?detail=true").json() == {"uuid": uid, "name": name}
    assert admin.get(f"/v2/principal/{uuid.uuid4()}").status_code == 404
    device = make_object(admin, C.Device)
    assert admin.get(f"/v2/principal/{device}").status_code == 404
    assert admin.get("/v2/principal/not-a-uuid").status_code == 410


def test_get_principal_needs_readkerberos_on_it(actor: Actor) -> None:
    uid, name = make_principal(actor.admin)
    other, _ = make_principal(actor.admin)
    api = actor.basic()
    for path in (f"/v2/principal/{uid}", f"/v2/principal/{uid}?detail=true",
                 f"/v2/principal/{uid}/login"):
        assert api.get(path).status_code == 403
    actor.grant(A.ReadKerberos, other)
    assert api.get(f"/v2/principal/{uid}").status_code == 403
    actor.grant(A.ReadKerberos, uid)
    assert api.get(f"/v2/principal/{uid}").json() == {"login": name, "uuid": uid}
    assert api.get(f"/v2/principal/{uid}/login").json() == name


# -- identities of a principal --------------------------------------------------------------
def test_identity_set_get_list_delete(admin: Api) -> None:
    # lib/api_v2.js id_get (`single().map(id => id.name)`: a JSON string), id_put and id_del
    # (lib/queries.js identity_add: 204, an identical row is skipped; identity_delete:
    # 204 or 404), id_list_kind (names, uniq'd) and id_find (`single().map(id => id.uuid)`)
    uid, name = make_principal(admin)
    upn = new_upn()
    assert admin.get(f"/v2/principal/{uid}/kerberos").status_code == 404
    assert admin.put(f"/v2/principal/{uid}/kerberos", json=upn).status_code == 204
    assert admin.put(f"/v2/principal/{uid}/kerberos", json=upn).status_code == 204  # again
    r = admin.get(f"/v2/principal/{uid}/kerberos")
    assert r.status_code == 200 and r.json() == upn
    assert admin.get(f"/v2/principal/{uid}/login").json() == name
    names = admin.get("/v2/identity/kerberos").json()
    assert upn in names and names == sorted(set(names))
    assert admin.get(f"/v2/identity/kerberos/{upn}").json() == uid
    assert admin.get(f"/v2/identity/login/{name}").json() == uid

    assert admin.delete(f"/v2/principal/{uid}/kerberos").status_code == 204
    assert admin.get(f"/v2/principal/{uid}/kerberos").status_code == 404
    assert admin.delete(f"/v2/principal/{uid}/kerberos").status_code == 404
    assert admin.get(f"/v2/identity/kerberos/{upn}").status_code == 404
    assert upn not in admin.get("/v2/identity/kerberos").json()
    assert admin.get(f"/v2/principal/{uid}").json() == {"login": name, "uuid": uid}


def test_deleting_a_principal_removes_its_identities(admin: Api) -> None:
    uid, name = make_principal(admin)
    upn = new_upn()
    set_kerberos(admin, uid, upn)
    assert admin.delete(f"/v2/principal/{uid}").status_code == 204
    assert admin.get(f"/v2/identity/kerberos/{upn}").status_code == 404
    assert admin.get(f"/v2/identity/login/{name}").status_code == 404
    assert admin.get(f"/v2/principal/{uid}").status_code == 404


@pytest.mark.parametrize(("path", "body", "status"), [
    ("login", '"x@REALM"', 405),  # ours: the login name is not set here
    ("ldap", '"x@REALM"', 404),  # lib/model.js _identity_request: no such idkind → 404
    ("kerberos", '"no-realm"', 422),  # ours: upstream stores any string
    ("kerberos", '"two words@REALM"', 422),
    ("kerberos", "5", 422),
    ("kerberos", '{"kerberos": "x@REALM"}', 422),
    ("kerberos", "null", 422),
    ("kerberos", "not json", 400),
], ids=["login", "unknown-kind", "no-realm", "space", "number", "object", "null", "not-json"])
def test_identity_put_rejects(admin: Api, path: str, body: str, status: int) -> None:
    uid, name = make_principal(admin)
    r = admin.put(f"/v2/principal/{uid}/{path}", data=body,
                  headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    assert admin.get(f"/v2/principal/{uid}").json() == {"login": name, "uuid": uid}


def test_identity_routes_reject_a_malformed_uuid(admin: Api) -> None:
    # lib/api_v2.js _id_put: `if (!valid_uuid(uuid)) fail(410)`; reads: find_identities 410
    assert admin.put("/v2/principal/not-a-uuid/kerberos", json=new_upn()).status_code == 410
    assert admin.delete("/v2/principal/not-a-uuid/kerberos").status_code == 410
    assert admin.get("/v2/principal/not-a-uuid/kerberos").status_code == 410
    assert admin.delete("/v2/principal/not-a-uuid/login").status_code == 410


def test_a_second_principal_claiming_a_name_is_409(admin: Api) -> None:
    # lib/queries.js identity_add: unique (kind, name) violated (23505) → 409
    first, _ = make_principal(admin)
    second, second_name = make_principal(admin)
    upn = new_upn()
    set_kerberos(admin, first, upn)
    r = admin.put(f"/v2/principal/{second}/kerberos", json=upn)
    assert r.status_code == 409, r.text
    assert kerberos_of(admin, second) is None
    assert admin.get(f"/v2/principal/{second}").json() == {"login": second_name,
                                                           "uuid": second}
    assert admin.get(f"/v2/identity/kerberos/{upn}").json() == first
    assert kerberos_of(admin, first) == upn


def test_a_second_name_of_one_kind_is_409_and_the_same_again_is_204(admin: Api) -> None:
    # lib/queries.js identity_add: one identity per principal and kind (23505 → 409); the
    # same name again inserts nothing (`except select …`) and answers 204
    uid, _ = make_principal(admin)
    upn = new_upn()
    set_kerberos(admin, uid, upn)
    set_kerberos(admin, uid, upn)
    r = admin.put(f"/v2/principal/{uid}/kerberos", json=new_upn())
    assert r.status_code == 409, r.text
    assert kerberos_of(admin, uid) == upn


def test_identity_writes_need_writekerberos_on_the_principal(actor: Actor) -> None:
    # lib/api_v2.js _id_put: `check_acl(req, Perm.WriteKrb, uuid)` first (403 before the
    # kind is looked at), for PUT and DELETE alike
    admin = actor.admin
    uid, _ = make_principal(admin)
    other, _ = make_principal(admin)
    held = new_upn()
    set_kerberos(admin, uid, held)
    api = actor.basic()

    def refused() -> None:
        assert api.put(f"/v2/principal/{uid}/kerberos", json=new_upn()).status_code == 403
        assert api.delete(f"/v2/principal/{uid}/kerberos").status_code == 403
        assert api.put(f"/v2/principal/{uid}/login", json=new_upn()).status_code == 403
        assert api.put(f"/v2/principal/{uid}/ldap", json=new_upn()).status_code == 403
        assert kerberos_of(admin, uid) == held

    refused()
    actor.grant(A.WriteKerberos, other)
    refused()
    actor.grant(A.ReadKerberos, NULL)
    refused()
    actor.grant(A.WriteKerberos, uid)
    assert api.delete(f"/v2/principal/{uid}/kerberos").status_code == 204
    assert kerberos_of(admin, uid) is None
    fresh = new_upn()
    assert api.put(f"/v2/principal/{uid}/kerberos", json=fresh).status_code == 204
    assert kerberos_of(admin, uid) == fresh


def test_identity_reads_need_readkerberos(actor: Actor) -> None:
    # lib/dataflow.js track_identities: "ReadKrb is repurposed here as 'read any identity'"
    uid, name = make_principal(actor.admin)
    upn = new_upn()
    set_kerberos(actor.admin, uid, upn)
    api = actor.basic()
    paths = [f"/v2/principal/{uid}/kerberos", "/v2/identity/kerberos", "/v2/identity/login",
             f"/v2/identity/kerberos/{upn}", f"/v2/identity/login/{name}"]
    for path in paths:
        assert api.get(path).status_code == 403, path
    actor.grant(A.WriteKerberos, NULL)
    for path in paths:
        assert api.get(path).status_code == 403, path
    actor.grant(A.ReadKerberos, NULL)
    assert api.get(f"/v2/principal/{uid}/kerberos").json() == upn
    assert upn in api.get("/v2/identity/kerberos").json()
    assert name in api.get("/v2/identity/login").json()
    assert api.get(f"/v2/identity/kerberos/{upn}").json() == uid
    assert api.get(f"/v2/identity/login/{name}").json() == uid


def test_identity_kinds_need_no_permission(actor: Actor) -> None:
    # lib/api_v2.js id_kinds: a fixed list, no check (upstream ["kerberos"]; ours adds
    # "login", the password-login name every principal has)
    r = actor.basic().get("/v2/identity")
    assert r.status_code == 200 and r.json() == ["kerberos", "login"]


def test_identity_lists_by_kind(admin: Api) -> None:
    # lib/api_v2.js id_list_kind: the names of that kind; none is 404
    logins = admin.get("/v2/identity/login").json()
    assert "admin" in logins and logins == sorted(set(logins))
    assert admin.get("/v2/identity/ldap").status_code == 404
    assert admin.get(f"/v2/identity/ldap/{new_upn()}").status_code == 404


def test_kerberos_lookups_fall_back_to_the_login_name(admin: Api) -> None:
    # upstream (lib/dataflow.js track_identities) finds stored Kerberos names only, and a
    # name failing valid_krb is 410; ours: a name without @REALM is a login name, and an
    # unheld UPN finds the login name before the "@"; the login kind is exact
    uid, name = make_principal(admin)
    assert admin.get(f"/v2/identity/kerberos/{name}").json() == uid
    assert admin.get(f"/v2/identity/kerberos/no-{name}").status_code == 404
    assert admin.get(f"/v2/identity/kerberos/{name}@{REALM}").json() == uid
    assert admin.get(f"/v2/identity/login/{name}@{REALM}").status_code == 404
    assert admin.get(f"/v2/identity/kerberos/no-{name}@{REALM}").status_code == 404
    # a name starting with a login name belongs to that login's principal: no other may
    # hold it (409, root included), so the lookup keeps finding the login's principal
    holder, _ = make_principal(admin)
    r = admin.put(f"/v2/principal/{holder}/kerberos", json=f"{name}@{REALM}")
    assert r.status_code == 409, r.text
    assert admin.get(f"/v2/identity/kerberos/{name}@{REALM}").json() == uid
    set_kerberos(admin, holder, f"other-{name}@{REALM}")
    assert admin.get(f"/v2/identity/kerberos/other-{name}@{REALM}").json() == holder


# -- groups ---------------------------------------------------------------------------------
def test_principal_groups(admin: Api) -> None:
    # lib/dataflow.js track_groups: the principal-groups (subclasses of Principal) holding
    # it, recursively; 410 unless it is a principal (lib/api_v2.js id_groups)
    uid, _ = make_principal(admin)
    assert admin.get(f"/v2/principal/{uid}/groups").json() == []
    outer, inner, unrelated = make_class(admin), make_class(admin), make_class(admin)
    for parent, child in ((C.Principal, outer), (outer, inner)):
        r = admin.put(f"/v2/class/{parent}/direct/subclass/{child}")
        assert r.status_code == 204, r.text
    add_member(admin, inner, uid)
    add_member(admin, unrelated, uid)  # a class, but no principal group
    r = admin.get(f"/v2/principal/{uid}/groups")
    assert r.status_code == 200, r.text
    assert sorted(r.json()) == sorted([outer, inner])
    other, _ = make_principal(admin)
    add_member(admin, outer, other)
    assert admin.get(f"/v2/principal/{other}/groups").json() == [outer]

    device = make_object(admin, C.Device)
    assert admin.get(f"/v2/principal/{device}/groups").status_code == 410
    assert admin.get(f"/v2/principal/{uuid.uuid4()}/groups").status_code == 410
    assert admin.get("/v2/principal/not-a-uuid/groups").status_code == 410


def test_principal_groups_need_readkerberos_on_the_wildcard(actor: Actor) -> None:
    # lib/dataflow.js track_groups: `!perm ? 403` before `!groups ? 410`
    uid, _ = make_principal(actor.admin)
    device = make_object(actor.admin, C.Device)
    api = actor.basic()
    assert api.get(f"/v2/principal/{uid}/groups").status_code == 403
    assert api.get(f"/v2/principal/{device}/groups").status_code == 403
    actor.grant(A.ReadKerberos, uid)
    assert api.get(f"/v2/principal/{uid}/groups").status_code == 403
    actor.grant(A.ReadKerberos, NULL)
    assert api.get(f"/v2/principal/{uid}/groups").json() == []
    assert api.get(f"/v2/principal/{device}/groups").status_code == 410
