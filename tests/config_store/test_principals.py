"""The Auth subset: principals and passwords, identities, whoami, tokens, grants and ACLs.

Creating a principal *with* a password costs an argon2 hash (most of a second here), so
tests that only need a principal to name in a grant or an ACL create it without one.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from fplus.config_store import uuids
from fplus.config_store._domain import credentials
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.config_store.actors import (
    Actor,
    add_member,
    bearer,
    exists,
    grants_of,
    make_principal,
    unique,
)
from tests.conftest import grant, make_class, make_object, make_user

P = uuids.ConfigDBPerm
A = uuids.AuthPerm
C = uuids.Class
S = uuids.Special
NULL = uuids.NULL



VICTIM_PASSWORD = "victim-password"


@pytest.fixture(scope="module")
def victim(config_store: ConfigStoreProcess) -> tuple[str, str]:
    """A principal with a password (``VICTIM_PASSWORD``): ``(uuid, name)``."""
    admin = Api(config_store.url, ("admin", ADMIN_PASSWORD))
    uid, api = make_user(admin, password=VICTIM_PASSWORD)
    assert api.auth is not None
    return uid, api.auth[0]


def login(base: str, name: str, password: str) -> int:
    """The status a Basic login as ``name`` gets."""
    return Api(base, (name, password)).get("/v2/whoami/uuid").status_code


def principal_names(admin: Api) -> set[str]:
    """The login names of every principal (our ``?detail=true`` form of the listing)."""
    r = admin.get("/v2/principal?detail=true")
    assert r.status_code == 200, r.text
    return {p["name"] for p in r.json()}


# -- principals ----------------------------------------------------------------------------
def test_create_principal_new_then_same_then_conflicts(admin: Api) -> None:
    name, password = unique("alice"), "correct horse"
    r = admin.post("/v2/principal", json={"name": name, "password": password})
    assert r.status_code == 201, r.text
    uid = r.json()["uuid"]
    assert r.json() == {"uuid": uid, "name": name}
    assert Api(admin.base, (name, password)).get("/v2/whoami/uuid").json() == uid
    assert admin.get(f"/v2/principal/{uid}?detail=true").json() == {"uuid": uid, "name": name}
    assert admin.get(f"/v2/principal/{uid}").json() == {"login": name, "uuid": uid}
    assert admin.get(f"/v2/class/{C.Principal}/member/{uid}").status_code == 204

    again = admin.post("/v2/principal", json={"name": name, "password": password})
    assert again.status_code == 200 and again.json()["uuid"] == uid
    assert admin.post("/v2/principal", json={"name": name}).json()["uuid"] == uid

    stranger = str(uuid.uuid4())
    r = admin.post("/v2/principal", json={"name": name, "uuid": stranger})
    assert r.status_code == 409, r.text
    assert not exists(admin, stranger)
    r = admin.post("/v2/principal", json={"name": unique("renamed"), "uuid": uid})
    assert r.status_code == 409, r.text
    assert admin.get(f"/v2/principal/{uid}?detail=true").json()["name"] == name
    assert admin.get(f"/v2/identity/login/{name}").json() == uid
    assert login(admin.base, name, password) == 200


def test_create_principal_with_given_uuid(admin: Api) -> None:
    wanted, name = str(uuid.uuid4()), unique()
    r = admin.post("/v2/principal", json={"name": name, "uuid": wanted})
    assert r.status_code == 201 and r.json()["uuid"] == wanted
    assert admin.get(f"/v2/identity/login/{name}").json() == wanted


_OK_NAME = "valid-name-never-created"
BAD_PRINCIPALS: list[tuple[str, Any]] = [
    ("dot-dot-slash", {"name": "../x", "password": "pw"}),
    ("empty", {"name": "", "password": "pw"}),
    ("leading-space", {"name": " x", "password": "pw"}),
    ("inner-space", {"name": "a b"}),
    ("colon", {"name": "a:b"}),  # would break Basic auth
    ("non-ascii", {"name": "ünï"}),
    ("too-long", {"name": "x" * 254}),
    ("leading-dot", {"name": ".hidden"}),
    ("name-not-string", {"name": 5}),
    ("no-name", {"password": "pw"}),
    ("not-an-object", [_OK_NAME]),
    ("empty-password", {"name": _OK_NAME, "password": ""}),
    ("password-not-string", {"name": _OK_NAME, "password": 5}),
    ("bad-uuid", {"name": _OK_NAME, "uuid": "NOT-A-UUID"}),
    ("bad-class", {"name": _OK_NAME, "class": "principal"}),
]


@pytest.mark.parametrize("body", [b for _, b in BAD_PRINCIPALS],
                         ids=[n for n, _ in BAD_PRINCIPALS])
def test_create_principal_rejects(admin: Api, body: Any) -> None:
    before = principal_names(admin)
    r = admin.post("/v2/principal", json=body)
    assert r.status_code == 422, r.text
    assert principal_names(admin) == before
    assert admin.get(f"/v2/identity/login/{_OK_NAME}").status_code == 404


KERBEROS_NAMES: list[tuple[str, Callable[[str], str]]] = [
    ("host-instance", lambda u: f"host/edge-{u}.example.com"),
    ("punctuation", lambda u: f"svc.a_b+c-d.{u}"),
    ("with-at", lambda u: f"user-{u}@REALM.EXAMPLE"),
    ("longest", lambda u: u + "x" * (253 - len(u))),
    ("leading-digit", lambda u: f"9lives-{u}"),
]


@pytest.mark.parametrize("make_name", [m for _, m in KERBEROS_NAMES],
                         ids=[n for n, _ in KERBEROS_NAMES])
def test_create_principal_accepts_kerberos_style_names(admin: Api,
                                                       make_name: Callable[[str], str]) -> None:
    name = make_name(uuid.uuid4().hex[:10])
    uid, _ = make_principal(admin, name)
    assert admin.get(f"/v2/identity/login/{name}").json() == uid
    assert admin.get(f"/v2/principal/{uid}?detail=true").json() == {"uuid": uid, "name": name}
    assert admin.get(f"/v2/principal/{uid}").json() == {"login": name, "uuid": uid}


def test_principal_routes_need_kerberos_permissions(actor: Actor) -> None:
    api = actor.basic()
    name = unique()
    assert api.post("/v2/principal", json={"name": name}).status_code == 403
    for detail in ("", "?detail=true"):
        assert api.get(f"/v2/principal{detail}").status_code == 403
        assert api.get(f"/v2/principal/{actor.uuid}{detail}").status_code == 403
    assert name not in principal_names(actor.admin)
    actor.grant(A.ReadKerberos, S.Self)
    assert api.get(f"/v2/principal/{actor.uuid}?detail=true").json() == {"uuid": actor.uuid,
                                                                         "name": actor.name}
    assert api.get(f"/v2/principal/{actor.uuid}").json() == {"login": actor.name,
                                                             "uuid": actor.uuid}
    assert api.get("/v2/principal").status_code == 403
    assert api.get("/v2/principal?detail=true").status_code == 403
    actor.grant(A.ReadKerberos, NULL)
    assert {"uuid": actor.uuid, "name": actor.name} in api.get(
        "/v2/principal?detail=true").json()
    listed = api.get("/v2/principal").json()
    assert actor.uuid in listed and listed == sorted(set(listed))
    actor.grant(A.WriteKerberos, C.Principal)
    assert api.post("/v2/principal", json={"name": name}).status_code == 403  # + CreateObj
    assert name not in principal_names(actor.admin)
    actor.grant(P.CreateObj, C.Principal)
    r = api.post("/v2/principal", json={"name": name})
    assert r.status_code == 201, r.text
    assert actor.admin.get(f"/v2/app/{uuids.App.Registration}/object/{r.json()['uuid']}"
                           ).json()["owner"] == actor.uuid


def test_create_principal_with_label_groups_and_grants(admin: Api) -> None:
    """The extension: one request names, groups and grants the new principal; repeating it
    changes nothing (no duplicate grants)."""
    group, app = make_class(admin), make_object(admin, C.App)
    body = {"name": unique("edge"), "label": "Edge flux: line-1", "groups": [group],
            "grants": [{"permission": P.ReadApp, "target": app},
                       {"permission": P.WriteApp, "target": app, "object": group}]}
    r = admin.post("/v2/principal", json=body)
    assert r.status_code == 201, r.text
    uid = r.json()["uuid"]
    assert admin.get(f"/v2/app/{uuids.App.Info}/object/{uid}").json() == \
        {"name": "Edge flux: line-1"}
    assert admin.get(f"/v2/class/{group}/direct/member/{uid}").status_code == 204
    grants = [admin.get(f"/v2/grant/{g}").json() for g in grants_of(admin, uid)]
    assert sorted((g["permission"], g["target"], g.get("object")) for g in grants) == sorted(
        [(P.ReadApp, app, None), (P.WriteApp, app, group)])
    again = admin.post("/v2/principal", json=body)
    assert again.status_code == 200 and again.json()["uuid"] == uid
    assert len(grants_of(admin, uid)) == 2


@pytest.mark.parametrize("extra", [
    {"label": ""}, {"label": 5}, {"groups": "not-a-list"}, {"groups": ["not-a-uuid"]},
    {"grants": [{"permission": "x", "target": NULL}]}, {"grants": ["x"]},
    {"grants": [{"permission": NULL, "target": NULL, "bogus": 1}]},
])
def test_create_principal_extension_rejects(admin: Api, extra: dict[str, Any]) -> None:
    name = unique()
    r = admin.post("/v2/principal", json={"name": name, **extra})
    assert r.status_code == 422, r.text
    assert name not in principal_names(admin)


def test_create_principal_extension_needs_each_permission(actor: Actor) -> None:
    """Grouping needs WriteMembers on the group; granting needs WriteACL on the permission —
    checked before anything is created."""
    group = make_class(actor.admin)
    actor.grant(A.WriteKerberos, C.Principal)
    actor.grant(P.CreateObj, C.Principal)
    api = actor.basic()
    name = unique()
    assert api.post("/v2/principal", json={"name": name, "groups": [group]}).status_code == 403
    grant = {"permission": P.ReadApp, "target": NULL}
    assert api.post("/v2/principal", json={"name": name, "grants": [grant]}).status_code == 403
    assert name not in principal_names(actor.admin)


@dataclass(frozen=True)
class TakeoverCase:
    name: str
    body: Callable[[str, str], dict[str, Any]]  # (victim uuid, victim name) -> request body
    status: int


TAKEOVER_CASES = [
    TakeoverCase("new-principal", lambda v, n: {"name": unique("fresh")}, 201),
    TakeoverCase("re-password-by-name", lambda v, n: {"name": n, "password": "attacker-pw"},
                 403),
    TakeoverCase("re-password-by-name-and-uuid",
                 lambda v, n: {"name": n, "uuid": v, "password": "attacker-pw"}, 403),
]


@pytest.mark.parametrize("case", TAKEOVER_CASES, ids=[c.name for c in TAKEOVER_CASES])
def test_creating_principals_does_not_allow_taking_over_existing_ones(
        actor: Actor, admin: Api, victim: tuple[str, str], case: TakeoverCase,
        request: pytest.FixtureRequest) -> None:
    """WriteKerberos + CreateObj on the Principal class lets a user create principals; it
    must not let them re-password one that exists (that needs WriteKerberos on *it*)."""
    victim_uuid, victim_name = victim
    actor.grant(A.WriteKerberos, C.Principal)
    actor.grant(P.CreateObj, C.Principal)
    body = case.body(victim_uuid, victim_name)
    r = actor.basic().post("/v2/principal", json=body)
    if r.status_code < 300 and body.get("name") == victim_name:  # keep the victim usable
        request.addfinalizer(lambda: admin.put(f"/v2/principal/{victim_uuid}/password",
                                               json=VICTIM_PASSWORD))
    assert r.status_code == case.status, r.text
    assert login(admin.base, victim_name, "attacker-pw") == 401
    assert login(admin.base, victim_name, VICTIM_PASSWORD) == 200


def test_creating_principals_does_not_turn_other_objects_into_principals(
        actor: Actor, admin: Api, new_app: str) -> None:
    """A device holding grants must not become a principal whose password a user with
    principal-creating rights chooses (it would inherit the device's grants)."""
    device = make_object(admin, C.Device)
    grant(admin, device, P.ReadApp, new_app)
    actor.grant(A.WriteKerberos, C.Principal)
    actor.grant(P.CreateObj, C.Principal)
    name = unique("device")
    r = actor.basic().post("/v2/principal",
                           json={"name": name, "uuid": device, "password": "attacker-pw"})
    assert r.status_code == 403, r.text
    assert admin.get(f"/v2/class/{C.Principal}/member/{device}").status_code == 404
    assert admin.get(f"/v2/identity/login/{name}").status_code == 404
    assert login(admin.base, name, "attacker-pw") == 401


def test_change_password(admin: Api) -> None:
    uid, api = make_user(admin, password="old-password")
    assert api.auth is not None
    name = api.auth[0]
    assert api.get("/v2/whoami/uuid").status_code == 200
    token = api.post("/token").json()["token"]

    r = admin.put(f"/v2/principal/{uid}/password", json="new:pass word")
    assert r.status_code == 204, r.text
    assert login(admin.base, name, "old-password") == 401
    assert login(admin.base, name, "new:pass word") == 200  # Basic splits at the first ':'
    assert bearer(admin.base, token).get("/v2/whoami/uuid").status_code == 401


def test_generated_password(admin: Api) -> None:
    """POST .../password replaces the password with a generated one, shown once; the old
    password and tokens stop working, and the hash stored is not argon2 but salted SHA-256."""
    uid, api = make_user(admin, password="old-password")
    assert api.auth is not None
    name = api.auth[0]
    token = api.post("/token").json()["token"]
    r = admin.post(f"/v2/principal/{uid}/password")
    assert r.status_code == 200, r.text
    first = r.json()["password"]
    assert len(first) >= 43
    assert login(admin.base, name, "old-password") == 401
    assert bearer(admin.base, token).get("/v2/whoami/uuid").status_code == 401
    assert login(admin.base, name, first) == 200
    second = admin.post(f"/v2/principal/{uid}/password").json()["password"]
    assert second != first
    assert login(admin.base, name, first) == 401
    assert login(admin.base, name, second) == 200
    assert login(admin.base, name, second[:-1]) == 401


def test_generated_password_needs_write_kerberos(actor: Actor) -> None:
    target, _ = make_principal(actor.admin)
    api = actor.basic()
    assert api.post(f"/v2/principal/{target}/password").status_code == 403
    actor.grant(A.WriteKerberos, target)
    assert api.post(f"/v2/principal/{target}/password").status_code == 200
    assert actor.admin.post(f"/v2/principal/{uuid.uuid4()}/password").status_code == 404


@pytest.mark.parametrize(("stored", "given", "ok"), [
    ("generated", "right", True),
    ("generated", "wrong", False),
    ("generated", "", False),
    ("argon2", "right", True),
    ("argon2", "wrong", False),
    ("none", "right", False),
])
def test_verify_password_table(stored: str, given: str, ok: bool) -> None:
    secret, hashed = credentials.generate_secret()
    if stored == "argon2":
        secret, hashed = "s3cret", credentials.hash_password("s3cret")
    elif stored == "none":
        hashed = None  # type: ignore[assignment]
    candidate = {"right": secret, "wrong": secret + "x", "": ""}[given]
    assert credentials.verify_password(hashed, candidate) is ok


@pytest.mark.parametrize(("raw", "content_type", "status"), [
    ('{"password": "x"}', "application/json", 422),
    ('""', "application/json", 422),
    ("5", "application/json", 422),
    ("null", "application/json", 422),
    ("not json", "application/json", 400),
    ('"pw"', "text/plain", 415),
])
def test_change_password_rejects(admin: Api, raw: str, content_type: str, status: int) -> None:
    uid, _ = make_principal(admin)
    r = admin.put(f"/v2/principal/{uid}/password", data=raw,
                  headers={"Content-Type": content_type})
    assert r.status_code == status, r.text


def test_change_password_of_unknown_principal(admin: Api, new_obj: str) -> None:
    assert admin.put(f"/v2/principal/{new_obj}/password", json="pw").status_code == 404
    assert admin.put(f"/v2/principal/{uuid.uuid4()}/password", json="pw").status_code == 404


def test_change_own_password_needs_writekerberos_on_self(admin: Api) -> None:
    uid, api = make_user(admin, password="mine-old")
    assert api.auth is not None
    other, _ = make_principal(admin)
    assert api.put(f"/v2/principal/{uid}/password", json="mine-new").status_code == 403
    grant(admin, uid, A.WriteKerberos, S.Self)
    assert api.put(f"/v2/principal/{other}/password", json="mine-new").status_code == 403
    assert api.put(f"/v2/principal/{uid}/password", json="mine-new").status_code == 204
    assert login(admin.base, api.auth[0], "mine-new") == 200


def test_delete_principal(admin: Api, actor: Actor) -> None:
    uid, api = make_user(admin)
    assert api.auth is not None
    name, password = api.auth
    token = api.post("/token").json()["token"]
    mine = [grant(admin, uid, P.ReadApp, NULL), grant(admin, uid, P.ListObj, NULL, plural=True)]
    assert sorted(grants_of(admin, uid)) == sorted(mine)

    assert actor.basic().delete(f"/v2/principal/{uid}").status_code == 403
    assert login(admin.base, name, password) == 200

    assert admin.delete(f"/v2/principal/{uid}").status_code == 204
    assert login(admin.base, name, password) == 401
    assert bearer(admin.base, token).get("/v2/whoami/uuid").status_code == 401
    assert grants_of(admin, uid) == []
    for g in mine:
        assert admin.get(f"/v2/grant/{g}").status_code == 404
    assert admin.get(f"/v2/principal/{uid}").status_code == 404
    assert admin.get(f"/v2/principal/{uid}?detail=true").status_code == 404
    assert admin.get(f"/v2/identity/login/{name}").status_code == 404
    assert admin.get(f"/v2/identity/kerberos/{name}@REALM").status_code == 404
    assert admin.delete(f"/v2/principal/{uid}").status_code == 404
    again = admin.post("/v2/principal", json={"name": name})
    assert again.status_code == 201 and again.json()["uuid"] != uid


# -- identities -----------------------------------------------------------------------------
@dataclass(frozen=True)
class IdentityCase:
    name: str
    lookup: Callable[[str], str]  # principal name -> ``<kind>/<name>`` looked up
    grants: tuple[tuple[str, str], ...]
    status: int


READ_ANY = ((A.ReadKerberos, NULL),)
IDENTITY_CASES = [
    IdentityCase("login-exact", lambda n: f"login/{n}", READ_ANY, 200),
    IdentityCase("kerberos-falls-back-to-login", lambda n: f"kerberos/{n}@FACTORYPLUS.EXAMPLE",
                 READ_ANY, 200),
    # ours: a "Kerberos" name without @REALM is a login name (upstream: 410)
    IdentityCase("kerberos-without-realm-is-a-login-name", lambda n: f"kerberos/{n}", READ_ANY,
                 200),
    IdentityCase("unknown-kerberos-without-realm", lambda n: f"kerberos/no-{n}", READ_ANY, 404),
    IdentityCase("login-with-realm-is-not-the-login", lambda n: f"login/{n}@REALM", READ_ANY,
                 404),
    IdentityCase("unknown-login", lambda n: f"login/no-{n}", READ_ANY, 404),
    IdentityCase("unknown-kerberos", lambda n: f"kerberos/no-{n}@REALM", READ_ANY, 404),
    IdentityCase("unknown-kind", lambda n: f"ldap/{n}", READ_ANY, 404),
    IdentityCase("ungranted", lambda n: f"login/{n}", (), 403),
    IdentityCase("ungranted-kerberos", lambda n: f"kerberos/{n}@REALM", (), 403),
    IdentityCase("readkerberos-on-self-only", lambda n: f"login/{n}", ((A.ReadKerberos, S.Self),),
                 403),
    IdentityCase("writekerberos-is-not-read", lambda n: f"login/{n}", ((A.WriteKerberos, NULL),),
                 403),
]


@pytest.mark.parametrize("case", IDENTITY_CASES, ids=[c.name for c in IDENTITY_CASES])
def test_identity_lookup(actor: Actor, case: IdentityCase) -> None:
    uid, name = make_principal(actor.admin)
    for perm, target in case.grants:
        actor.grant(perm, target)
    r = actor.basic().get(f"/v2/identity/{case.lookup(name)}")
    assert r.status_code == case.status, r.text
    if r.status_code == 200:
        assert r.json() == uid


def test_identity_as_admin(admin: Api) -> None:
    uid, name = make_principal(admin, f"host/{unique()}.example")
    assert admin.get(f"/v2/identity/login/{name}").json() == uid
    assert admin.get(f"/v2/identity/kerberos/{name}@REALM").json() == uid
    root = admin.get("/v2/whoami/uuid").json()
    assert admin.get("/v2/identity/login/admin").json() == root
    assert admin.get("/v2/identity/kerberos/admin@REALM").json() == root
    assert admin.get("/v2/identity/kerberos/admin").json() == root  # no realm: a login name


# -- whoami and tokens ----------------------------------------------------------------------
def test_whoami(actor: Actor, admin: Api) -> None:
    """Upstream's shape (acs-auth lib/api_v2.js ``id_whoami``), needing no permission; ours
    with ``?detail=true``."""
    for api in (actor.basic(), actor.bearer()):
        assert api.get("/v2/whoami?detail=true").json() == {
            "uuid": actor.uuid, "name": actor.name, "root": False}
        assert api.get("/v2/whoami").json() == {"login": actor.name, "uuid": actor.uuid}
        r = api.get("/v2/whoami/uuid")
        assert r.status_code == 200 and r.json() == actor.uuid
    me = admin.get("/v2/whoami?detail=true").json()
    assert me["name"] == "admin" and me["uuid"] == admin.get("/v2/whoami/uuid").json()
    assert me["root"] is True
    assert admin.get("/v2/whoami").json() == {"login": "admin", "uuid": me["uuid"]}


def test_token_shape_and_use(actor: Actor) -> None:
    before = time.time() * 1000
    r = actor.basic().post("/token")
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"token", "expiry"}
    token, expiry = body["token"], body["expiry"]
    assert isinstance(token, str) and len(token) == 88
    assert len(base64.b64decode(token, validate=True)) == 66
    assert isinstance(expiry, int)
    lifetime = credentials.TOKEN_LIFETIME_S * 1000
    assert before + lifetime - 5000 <= expiry <= time.time() * 1000 + lifetime + 5000
    api = bearer(actor.base, token)
    assert api.get("/v2/whoami/uuid").json() == actor.uuid
    second = api.post("/token")  # a token cannot renew itself: only a password obtains one
    assert second.status_code == 403, second.text
    assert "Basic" in second.json()["error"]
    assert api.get("/v2/whoami/uuid").json() == actor.uuid  # the token itself still works


# -- grants ---------------------------------------------------------------------------------
def add_grant(api: Api, body: Any) -> tuple[int, str | None]:
    r = api.post("/v2/grant", json=body)
    return r.status_code, (r.json().get("uuid") if r.status_code in (200, 201) else None)


def test_grant_add_duplicate_get_delete(admin: Api, new_app: str, new_obj: str) -> None:
    who, _ = make_principal(admin)
    body = {"principal": who, "permission": P.ReadApp, "target": new_app, "plural": False}
    status, first = add_grant(admin, body)
    assert status == 201 and first
    assert add_grant(admin, body) == (200, first)
    assert add_grant(admin, {k: v for k, v in body.items() if k != "plural"}) == (200, first)
    assert add_grant(admin, body | {"object": None}) == (200, first)

    status, plural = add_grant(admin, body | {"plural": True})
    assert status == 201 and plural not in (None, first)
    status, restricted = add_grant(admin, body | {"object": new_obj})
    assert status == 201 and restricted not in (None, first, plural)
    assert add_grant(admin, body | {"object": new_obj}) == (200, restricted)

    assert admin.get(f"/v2/grant/{first}").json() == body | {"uuid": first}
    assert admin.get(f"/v2/grant/{restricted}").json() == body | {"uuid": restricted,
                                                                  "object": new_obj}
    assert sorted(grants_of(admin, who)) == sorted([first, plural, restricted])
    r = admin.post("/v2/grant/find", json={"principal": who, "plural": True})
    assert r.json() == [plural]

    assert admin.delete(f"/v2/grant/{first}").status_code == 204
    assert admin.get(f"/v2/grant/{first}").status_code == 404
    assert admin.delete(f"/v2/grant/{first}").status_code == 404
    assert sorted(grants_of(admin, who)) == sorted([plural, restricted])


def test_unknown_and_malformed_grant_ids(admin: Api) -> None:
    unknown = str(uuid.uuid4())
    assert admin.get(f"/v2/grant/{unknown}").status_code == 404
    assert admin.delete(f"/v2/grant/{unknown}").status_code == 404
    assert admin.get("/v2/grant/not-a-uuid").status_code == 410
    assert admin.delete("/v2/grant/NOT-A-UUID").status_code == 410


BAD_GRANTS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("principal-not-uuid", lambda g: g | {"principal": "alice"}),
    ("permission-not-uuid", lambda g: g | {"permission": "ReadApp"}),
    ("target-not-uuid", lambda g: g | {"target": 42}),
    ("target-missing", lambda g: {k: v for k, v in g.items() if k != "target"}),
    ("target-null", lambda g: g | {"target": None}),
    ("object-not-uuid", lambda g: g | {"object": "everything"}),
    ("unknown-field", lambda g: g | {"note": "hello"}),
    ("plural-string", lambda g: g | {"plural": "true"}),
    ("plural-number", lambda g: g | {"plural": 1}),
    ("plural-null", lambda g: g | {"plural": None}),
    ("not-an-object", lambda g: [g]),
    ("string-body", lambda g: "grant"),
]


@pytest.mark.parametrize("mutate", [m for _, m in BAD_GRANTS], ids=[n for n, _ in BAD_GRANTS])
def test_grant_body_validation(admin: Api, mutate: Callable[[dict[str, Any]], Any]) -> None:
    who, _ = make_principal(admin)
    body = {"principal": who, "permission": P.ReadApp, "target": NULL, "plural": False}
    r = admin.post("/v2/grant", json=mutate(body))
    assert r.status_code == 422, r.text
    assert grants_of(admin, who) == []


@dataclass(frozen=True)
class GrantAclCase:
    name: str
    grants: tuple[tuple[str, str, bool], ...]  # the actor's (permission, target, plural)
    permission: str  # of the grant the actor works on
    status: int


WRITEACL_CASES = [
    GrantAclCase("ungranted", (), P.ReadApp, 403),
    GrantAclCase("writeacl-on-that-permission", ((A.WriteACL, P.ReadApp, False),), P.ReadApp,
                 201),
    GrantAclCase("writeacl-on-another-permission", ((A.WriteACL, P.ReadApp, False),),
                 P.WriteApp, 403),
    GrantAclCase("writeacl-on-group-not-plural", ((A.WriteACL, P.All, False),), P.WriteApp,
                 403),
    GrantAclCase("writeacl-on-group-plural", ((A.WriteACL, P.All, True),), P.WriteApp, 201),
    GrantAclCase("writeacl-member-cannot-grant-group", ((A.WriteACL, P.ReadApp, False),),
                 P.All, 403),
    GrantAclCase("writeacl-wildcard", ((A.WriteACL, NULL, False),), A.WriteKerberos, 201),
    GrantAclCase("readacl-is-not-writeacl", ((A.ReadACL, NULL, False),), P.ReadApp, 403),
]


@pytest.mark.parametrize("case", WRITEACL_CASES, ids=[c.name for c in WRITEACL_CASES])
def test_adding_grants_needs_writeacl(actor: Actor, case: GrantAclCase) -> None:
    """WriteACL on the permission is needed even by one holding the permission itself
    (which the grant rule also asks for: tests/config_store/test_grant_rule.py)."""
    who, _ = make_principal(actor.admin)
    actor.grant(case.permission, NULL)
    for perm, target, plural in case.grants:
        actor.grant(perm, target, plural)
    body = {"principal": who, "permission": case.permission, "target": NULL, "plural": False}
    status, made = add_grant(actor.basic(), body)
    assert status == case.status
    assert grants_of(actor.admin, who) == ([made] if status == 201 else [])


@pytest.mark.parametrize("case", WRITEACL_CASES, ids=[c.name for c in WRITEACL_CASES])
def test_deleting_grants_needs_writeacl(actor: Actor, case: GrantAclCase) -> None:
    who, _ = make_principal(actor.admin)
    target = grant(actor.admin, who, case.permission, NULL)
    for perm, on, plural in case.grants:
        actor.grant(perm, on, plural)
    r = actor.basic().delete(f"/v2/grant/{target}")
    assert r.status_code == (204 if case.status == 201 else case.status), r.text
    assert grants_of(actor.admin, who) == ([] if r.status_code == 204 else [target])


READACL_CASES = [
    GrantAclCase("ungranted", (), P.ReadApp, 403),
    GrantAclCase("readacl-on-that-permission", ((A.ReadACL, P.ReadApp, False),), P.ReadApp, 200),
    GrantAclCase("readacl-on-another-permission", ((A.ReadACL, P.WriteApp, False),), P.ReadApp,
                 403),
    GrantAclCase("readacl-on-group-plural", ((A.ReadACL, P.All, True),), P.ReadApp, 200),
    GrantAclCase("readacl-wildcard", ((A.ReadACL, NULL, False),), P.ReadApp, 200),
    # Ours: WriteACL reads a grant as well (upstream's grant_get needs WriteACL, not ReadACL).
    GrantAclCase("writeacl-also-reads", ((A.WriteACL, NULL, False),), P.ReadApp, 200),
    GrantAclCase("writeacl-on-another-permission", ((A.WriteACL, P.WriteApp, False),),
                 P.ReadApp, 403),
    GrantAclCase("readkerberos-is-not-readacl", ((A.ReadKerberos, NULL, False),), P.ReadApp,
                 403),
]


@pytest.mark.parametrize("case", READACL_CASES, ids=[c.name for c in READACL_CASES])
def test_reading_grants_needs_readacl(actor: Actor, case: GrantAclCase) -> None:
    who, _ = make_principal(actor.admin)
    target = grant(actor.admin, who, case.permission, NULL)
    for perm, on, plural in case.grants:
        actor.grant(perm, on, plural)
    api = actor.basic()
    r = api.get(f"/v2/grant/{target}")
    assert r.status_code == case.status, r.text
    found = api.post("/v2/grant/find", json={"principal": who})
    acl_perms = {A.ReadACL, A.WriteACL}
    if any(perm in acl_perms for perm, _, _ in case.grants):
        assert found.json() == ([target] if case.status == 200 else [])
    else:  # neither ReadACL nor WriteACL on anything: 403, as upstream's grant_find
        assert found.status_code == 403, found.text


# -- ACLs -----------------------------------------------------------------------------------
def _entries(pairs: set[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"permission": p, "target": t} for p, t in sorted(pairs)]


@pytest.fixture
def subject(admin: Api) -> dict[str, Any]:
    """A principal with one grant of each kind, and the ACL those grants expand to."""
    who, name = make_principal(admin)
    group = make_class(admin)
    add_member(admin, group, who)
    app = make_object(admin, C.App)
    apps = make_class(admin)
    members = [make_object(admin, apps) for _ in range(2)]
    sub = make_class(admin)
    r = admin.put(f"/v2/class/{apps}/direct/subclass/{sub}")
    assert r.status_code == 204, r.text
    members.append(make_object(admin, sub))
    r = admin.post("/v2/object", json={"class": C.Device, "owner": who})
    assert r.status_code == 201, r.text
    owned = r.json()["uuid"]
    target = make_object(admin, C.Device)
    grant(admin, who, P.ReadApp, app)
    grant(admin, who, P.WriteApp, apps, plural=True)
    grant(admin, group, P.ReadMembers, S.Self)  # held through the class
    grant(admin, who, P.DeleteObj, S.Mine)
    grant(admin, who, P.All, target)
    grant(admin, who, A.ReadKerberos, NULL)
    expected = {(P.ReadApp, app), (P.DeleteObj, owned), (A.ReadKerberos, NULL),
                (P.ReadMembers, who)}
    expected |= {(P.WriteApp, m) for m in members}
    expected |= {(getattr(P, n), target) for n in vars(P) if not n.startswith("_")
                 and n != "All"}
    return {"uuid": who, "name": name, "expected": expected}


def test_acl_contents(admin: Api, subject: dict[str, Any]) -> None:
    r = admin.get(f"/v2/acl/{subject['uuid']}")
    assert r.status_code == 200, r.text
    assert sorted(r.json(), key=lambda e: (e["permission"], e["target"])) == _entries(
        subject["expected"])
    by_name = admin.get(f"/v2/acl/kerberos/{subject['name']}@REALM")  # falls back to login
    assert by_name.status_code == 200 and by_name.json() == r.json()
    assert admin.get(f"/v2/acl/kerberos/{subject['name']}").json() == r.json()  # login name
    unknown = admin.get(f"/v2/acl/kerberos/no-{subject['name']}@REALM")  # never 404 upstream
    assert unknown.status_code == 200 and unknown.json() == []


def test_acl_of_principal_without_grants(admin: Api) -> None:
    who, name = make_principal(admin)
    r = admin.get(f"/v2/acl/{who}")
    assert r.status_code == 200 and r.json() == []
    r = admin.get(f"/v2/acl/kerberos/{name}@REALM")
    assert r.status_code == 200 and r.json() == []


@pytest.mark.parametrize(("readable", "keep"), [
    ((), None),
    (((A.ReadACL, P.ReadApp, False),), lambda p: p == P.ReadApp),
    (((A.ReadACL, P.All, True),), lambda p: p in vars(P).values()),
    (((A.ReadACL, P.All, False),), lambda p: False),
    (((A.ReadACL, NULL, False),), lambda p: True),
], ids=["ungranted", "readapp-only", "configdb-group-plural", "group-not-plural", "wildcard"])
def test_acl_is_filtered_by_readacl(actor: Actor, subject: dict[str, Any],
                                    readable: tuple[tuple[str, str, bool], ...],
                                    keep: Callable[[str], bool] | None) -> None:
    """Entries are those whose permission the caller holds ReadACL on; one holding ReadACL
    on nothing is refused (403), as upstream (acs-auth lib/api_v2.js ``_get_acl``)."""
    for perm, target, plural in readable:
        actor.grant(perm, target, plural)
    actor.grant(A.ReadKerberos, subject["uuid"])  # may resolve its name, for the by-name route
    api = actor.basic()
    for path in (f"/v2/acl/{subject['uuid']}", f"/v2/acl/kerberos/{subject['name']}@REALM"):
        r = api.get(path)
        if keep is None:
            assert r.status_code == 403, r.text
            continue
        assert r.status_code == 200, r.text
        want = _entries({(p, t) for p, t in subject["expected"] if keep(p)})
        assert sorted(r.json(), key=lambda e: (e["permission"], e["target"])) == want


def test_acl_follows_class_changes(admin: Api) -> None:
    """Plural expansion is live: members added to the target class appear in the ACL."""
    who, _ = make_principal(admin)
    apps = make_class(admin)
    grant(admin, who, P.ReadApp, apps, plural=True)
    assert admin.get(f"/v2/acl/{who}").json() == []
    app = make_object(admin, apps)
    assert admin.get(f"/v2/acl/{who}").json() == _entries({(P.ReadApp, app)})
    late = make_object(admin, C.App)
    add_member(admin, apps, late)
    assert admin.get(f"/v2/acl/{who}").json() == _entries({(P.ReadApp, app),
                                                           (P.ReadApp, late)})


def test_root_principal_cannot_be_deleted(admin: Api) -> None:
    root = admin.get("/v2/whoami/uuid").json()
    assert admin.delete(f"/v2/principal/{root}").status_code == 409
    assert admin.get("/v2/whoami").status_code == 200


def test_acl_marks_object_restricted_entries(admin: Api, new_app: str, new_obj: str) -> None:
    user, _ = make_user(admin)
    grant(admin, user, uuids.ConfigDBPerm.ReadApp, new_app, obj=new_obj)
    assert admin.get(f"/v2/acl/{user}").json() == [
        {"permission": uuids.ConfigDBPerm.ReadApp, "target": new_app, "object": new_obj}]


def test_find_grants_by_pattern(admin: Api) -> None:
    who, _ = make_principal(admin)
    klass = make_class(admin)
    mine = grant(admin, who, uuids.ConfigDBPerm.ReadApp, klass)
    found = admin.post("/v2/grant/find", json={"principal": who}).json()
    assert found == [mine]
    assert admin.post("/v2/grant/find", json={"principal": who, "target": klass,
                                              "plural": None, "object": None}).json() == [mine]
    assert admin.post("/v2/grant/find", json={"principal": who,
                                              "target": str(uuid.uuid4())}).json() == []


@pytest.mark.parametrize("pattern", [
    [], "x", {"principal": [None, None]}, {"principal": ""}, {"permission": "NOT-A-UUID"},
    {"target": 3}, {"plural": "yes"}, {"object": {}}, {"princpal": str(uuid.uuid4())},
])
def test_find_grants_rejects_malformed_patterns(admin: Api, pattern: Any) -> None:
    """A malformed pattern is 422, never "every grant" (or a 500)."""
    r = admin.post("/v2/grant/find", json=pattern)
    assert r.status_code == 422, r.text
    assert r.json()["error"]
