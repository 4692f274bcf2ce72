"""Who may do what: authentication and Factory+ ACL checks on the Config Store's routes.

Most tests are tables: one row per caller kind (how the caller authenticates and which
grants it holds) with the status each route must answer. Every refusal is followed by a
read-back as the root principal to prove that nothing was written.

One user (:class:`Actor`) serves a whole module because creating and first verifying an
argon2 password costs most of a second; the grants and class memberships a test gives it
are undone when the test ends.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
import requests
from flask.testing import FlaskClient

from fplus.config_store import uuids
from fplus.config_store._domain import credentials
from fplus.config_store._domain.store import open_store
from fplus.config_store._http.app import create_app
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.config_store.actors import (
    Actor,
    add_member,
    bearer,
    direct_members,
    exists,
    raw_auth,
    set_owner,
)
from tests.conftest import make_class, make_object

P = uuids.ConfigDBPerm
C = uuids.Class
S = uuids.Special
NULL = uuids.NULL

READ = (P.ReadApp,)
WRITE = (P.WriteApp,)
RW = (P.ReadApp, P.WriteApp)

CHALLENGE = 'Basic realm="Factory+"'
MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def bystander(config_store: ConfigStoreProcess) -> str:
    """Another principal (grants to it must never help the actor)."""
    admin = Api(config_store.url, ("admin", ADMIN_PASSWORD))
    r = admin.post("/v2/principal", json={"name": f"bystander-{uuid.uuid4().hex[:8]}"})
    assert r.status_code == 201, r.text
    return r.json()["uuid"]


# -- config entries: the matrix ---------------------------------------------------------
ORIGINAL = {"value": "original", "nested": {"keep": True}}
WRITTEN = {"value": "written"}
PATCH_DOC = {"patched": 1}


@dataclass
class Scene:
    """A fresh app with the entry ORIGINAL for two objects."""

    admin: Api
    app: str
    obj: str
    other_obj: str
    bystander: str
    etags: dict[str, str] = field(default_factory=dict)

    def url(self, obj: str | None = None) -> str:
        return f"/v2/app/{self.app}/object/{obj or self.obj}"

    def reset(self, obj: str) -> None:
        """(Re)write ORIGINAL for ``obj`` and remember its etag."""
        r = self.admin.put(self.url(obj), json=ORIGINAL)
        assert r.status_code in (201, 204), r.text
        self.etags[obj] = r.headers["ETag"]

    def problems(self, obj: str, want: object) -> list[str]:
        """How the entry for ``obj`` differs from ``want`` (None: absent; ORIGINAL: untouched,
        with its etag unchanged)."""
        r = self.admin.get(self.url(obj))
        if want is None:
            return [] if r.status_code == 404 else [f"entry still there: {r.text}"]
        if r.status_code != 200 or r.json() != want:
            return [f"entry is {r.status_code} {r.text}, wanted {want}"]
        if want == ORIGINAL and r.headers["ETag"] != self.etags[obj]:
            return ["entry's etag changed"]
        return []


@pytest.fixture
def scene(admin: Api, new_app: str, bystander: str) -> Scene:
    found = Scene(admin, new_app, make_object(admin, C.Device), make_object(admin, C.Device),
                  bystander)
    found.reset(found.obj)
    found.reset(found.other_obj)
    return found


Setup = Callable[[Actor, Scene], Api]
Expect = dict[str, int]
METHODS = ("GET", "HEAD", "PUT", "PATCH", "DELETE")

OK: Expect = {"GET": 200, "HEAD": 200, "PUT": 204, "PATCH": 204, "DELETE": 204}
DENIED: Expect = dict.fromkeys(METHODS, 403)
UNAUTHENTICATED: Expect = dict.fromkeys(METHODS, 401)
READ_ONLY: Expect = DENIED | {"GET": 200, "HEAD": 200}
WRITE_ONLY: Expect = DENIED | {"PUT": 204, "DELETE": 204}  # PATCH needs ReadApp too


def _via_class(a: Actor, s: Scene) -> Api:
    group = make_class(s.admin)
    a.join(group)
    return a.allow(RW, s.app, principal=group)


def _via_superclass(a: Actor, s: Scene) -> Api:
    inner, outer = make_class(s.admin), make_class(s.admin)
    a.join(inner)
    r = s.admin.put(f"/v2/class/{outer}/direct/subclass/{inner}")
    assert r.status_code == 204, r.text
    return a.allow(RW, s.app, principal=outer)


def _class_of_app(a: Actor, s: Scene, plural: bool) -> Api:
    apps = make_class(s.admin)
    add_member(s.admin, apps, s.app)
    return a.allow(RW, apps, plural=plural)


def _mine(a: Actor, s: Scene) -> Api:
    set_owner(s.admin, s.app, a.uuid)
    return a.allow(RW, S.Mine)


def _mine_object(a: Actor, s: Scene) -> Api:
    """An entry restricted to objects the caller owns (``object: Mine``), of one it owns."""
    set_owner(s.admin, s.obj, a.uuid)
    return a.allow(RW, s.app, obj=S.Mine)


def _other_app(a: Actor, s: Scene) -> Api:
    return a.allow(RW, make_object(s.admin, C.App))


def _bearer_granted(a: Actor, s: Scene) -> Api:
    a.allow(RW, s.app)
    return a.bearer()


def _granted_but(auth: Callable[[Actor, Scene], Api]) -> Setup:
    """Grant everything on the app, then authenticate with ``auth``."""
    def setup(a: Actor, s: Scene) -> Api:
        a.allow(RW, s.app)
        return auth(a, s)
    return setup


@dataclass(frozen=True)
class Case:
    name: str
    setup: Setup
    expect: Expect


ENTRY_CASES = [
    # authentication
    Case("anonymous", _granted_but(lambda a, s: Api(a.base)), UNAUTHENTICATED),
    Case("bad-password",
         _granted_but(lambda a, s: Api(a.base, (a.name, a.password + "-wrong"))),
         UNAUTHENTICATED),
    Case("unknown-user",
         _granted_but(lambda a, s: Api(a.base, (f"nobody-{uuid.uuid4().hex}", a.password))),
         UNAUTHENTICATED),
    Case("garbage-bearer", _granted_but(lambda a, s: bearer(a.base, "A" * 88)),
         UNAUTHENTICATED),
    Case("basic-not-base64", _granted_but(lambda a, s: raw_auth(a.base, "Basic %%%")),
         UNAUTHENTICATED),
    Case("unknown-scheme",
         _granted_but(lambda a, s: raw_auth(a.base, f"Digest {a.token}")), UNAUTHENTICATED),
    Case("bearer-granted", _bearer_granted, OK),
    Case("bearer-ungranted", lambda a, s: a.bearer(), DENIED),
    # grants
    Case("ungranted", lambda a, s: a.basic(), DENIED),
    Case("app-read-write", lambda a, s: a.allow(RW, s.app), OK),
    Case("app-read-only", lambda a, s: a.allow(READ, s.app), READ_ONLY),
    Case("app-write-only", lambda a, s: a.allow(WRITE, s.app), WRITE_ONLY),
    Case("wildcard-null", lambda a, s: a.allow(RW, NULL), OK),
    Case("other-app", _other_app, DENIED),
    Case("target-is-the-object-not-the-app", lambda a, s: a.allow(RW, s.obj), DENIED),
    Case("unrelated-permissions",
         lambda a, s: a.allow((P.ReadMembers, P.WriteMembers, uuids.AuthPerm.WriteACL), NULL),
         DENIED),
    Case("via-class", _via_class, OK),
    Case("via-superclass", _via_superclass, OK),
    Case("plural-class-of-app", lambda a, s: _class_of_app(a, s, plural=True), OK),
    Case("class-of-app-not-plural", lambda a, s: _class_of_app(a, s, plural=False), DENIED),
    Case("permission-group", lambda a, s: a.allow((P.All,), s.app), OK),
    Case("object-restricted", lambda a, s: a.allow(RW, s.app, obj=s.obj), OK),
    Case("object-restricted-wildcard-app", lambda a, s: a.allow(RW, NULL, obj=s.obj), OK),
    Case("object-restricted-to-other-object",
         lambda a, s: a.allow(RW, s.app, obj=s.other_obj), DENIED),
    Case("object-restricted-to-mine-owned-object", _mine_object, OK),
    Case("object-restricted-to-mine-unowned-object",
         lambda a, s: a.allow(RW, s.app, obj=S.Mine), DENIED),
    Case("self", lambda a, s: a.allow(RW, S.Self), DENIED),
    Case("mine-owned-app", _mine, OK),
    Case("mine-unowned-app", lambda a, s: a.allow(RW, S.Mine), DENIED),
    Case("granted-to-someone-else",
         lambda a, s: a.allow(RW, s.app, principal=s.bystander), DENIED),
]


def _call(api: Api, method: str, url: str) -> requests.Response:
    if method == "PUT":
        return api.put(url, json=WRITTEN)
    if method == "PATCH":
        return api.patch(url, data=json.dumps(PATCH_DOC), headers=MERGE_PATCH)
    return api.request(method, url)


def _expected_after(method: str, status: int) -> object:
    """The entry's value after ``method`` answered ``status`` (None: deleted)."""
    if status >= 300:
        return ORIGINAL
    return {"PUT": WRITTEN, "PATCH": ORIGINAL | PATCH_DOC, "DELETE": None}.get(method, ORIGINAL)


@pytest.mark.parametrize("case", ENTRY_CASES, ids=[c.name for c in ENTRY_CASES])
def test_entry_acl(actor: Actor, scene: Scene, case: Case) -> None:
    """One row per caller kind; every method runs against a freshly reset entry."""
    api = case.setup(actor, scene)
    got: Expect = {}
    problems: list[str] = []
    for method in METHODS:
        r = _call(api, method, scene.url())
        got[method] = r.status_code
        if r.status_code == 401 and r.headers.get("WWW-Authenticate") != CHALLENGE:
            problems.append(f"{method}: 401 without the Basic challenge")
        if r.status_code == 200 and method == "GET" and (
                r.json() != ORIGINAL or r.headers["ETag"] != scene.etags[scene.obj]):
            problems.append(f"GET answered {r.text} {r.headers.get('ETag')}")
        want = _expected_after(method, r.status_code)
        problems += [f"{method}: {p}" for p in scene.problems(scene.obj, want)]
        problems += [f"{method} (other object): {p}"
                     for p in scene.problems(scene.other_obj, ORIGINAL)]
        if want != ORIGINAL:
            scene.reset(scene.obj)
    assert got == case.expect
    assert problems == []


def test_object_restricted_grant_does_not_list_the_app(actor: Actor, scene: Scene) -> None:
    """A grant for one object's entry does not extend to app-wide listings."""
    api = actor.allow(RW, scene.app, obj=scene.obj)
    assert api.get(scene.url()).status_code == 200
    assert api.get(f"/v2/app/{scene.app}/object").status_code == 403
    assert api.get(f"/v2/app/{scene.app}/class/{C.Device}").status_code == 403
    full = actor.allow(READ, scene.app)
    assert sorted(full.get(f"/v2/app/{scene.app}/object").json()) == sorted(
        [scene.obj, scene.other_obj])


def test_root_principal_is_allowed_everything(admin: Api, scene: Scene) -> None:
    assert admin.get(scene.url()).status_code == 200
    assert admin.put(scene.url(), json=WRITTEN).status_code == 204
    assert admin.get("/v2/object").status_code == 200


# -- revocation ---------------------------------------------------------------------------
def _assert_locked_out(api: Api, scene: Scene) -> None:
    assert api.get(scene.url()).status_code == 403
    assert api.put(scene.url(), json=WRITTEN).status_code == 403
    after = scene.admin.get(scene.url())
    assert after.json() == ORIGINAL and after.headers["ETag"] == scene.etags[scene.obj]


@pytest.mark.parametrize("session", ["basic", "bearer"])
def test_revoking_a_grant_removes_access_immediately(actor: Actor, scene: Scene,
                                                     session: str) -> None:
    grants = [actor.grant(p, scene.app) for p in RW]
    api = actor.basic() if session == "basic" else actor.bearer()
    assert api.get(scene.url()).status_code == 200
    for g in grants:
        assert scene.admin.delete(f"/v2/grant/{g}").status_code == 204
    _assert_locked_out(api, scene)


def test_leaving_a_class_removes_its_grants(actor: Actor, scene: Scene) -> None:
    group = make_class(scene.admin)
    actor.join(group)
    api = actor.allow(RW, scene.app, principal=group)
    assert api.get(scene.url()).status_code == 200
    r = scene.admin.delete(f"/v2/class/{group}/direct/member/{actor.uuid}")
    assert r.status_code == 204, r.text
    _assert_locked_out(api, scene)


def test_taking_the_app_out_of_a_plural_target_removes_access(actor: Actor,
                                                               scene: Scene) -> None:
    apps = make_class(scene.admin)
    add_member(scene.admin, apps, scene.app)
    api = actor.allow(RW, apps, plural=True)
    assert api.get(scene.url()).status_code == 200
    r = scene.admin.delete(f"/v2/class/{apps}/direct/member/{scene.app}")
    assert r.status_code == 204, r.text
    _assert_locked_out(api, scene)


def test_giving_the_app_away_removes_mine_access(actor: Actor, scene: Scene) -> None:
    api = _mine(actor, scene)
    assert api.get(scene.url()).status_code == 200
    set_owner(scene.admin, scene.app, S.Unowned)
    _assert_locked_out(api, scene)


# -- object routes ------------------------------------------------------------------------
@dataclass(frozen=True)
class CreateCase:
    name: str
    grants: Callable[[Actor, str], object]  # (actor, class) -> None
    with_uuid: bool
    status: int


CREATE_CASES = [
    CreateCase("no-grant", lambda a, k: None, False, 403),
    CreateCase("createobj-on-class", lambda a, k: a.grant(P.CreateObj, k), False, 201),
    CreateCase("createobj-on-other-class", lambda a, k: a.grant(P.CreateObj, C.Device),
               False, 403),
    CreateCase("createobj-wildcard", lambda a, k: a.grant(P.CreateObj, NULL), False, 201),
    CreateCase("createobj-plural-over-classes",
               lambda a, k: a.grant(P.CreateObj, C.R1Class, plural=True), False, 201),
    CreateCase("createobj-via-group", lambda a, k: a.grant(P.All, k), False, 201),
    CreateCase("createobj-is-not-enough-with-uuid", lambda a, k: a.grant(P.CreateObj, k),
               True, 403),
    CreateCase("createspecificobj-with-uuid",
               lambda a, k: a.grant(P.CreateSpecificObj, k), True, 201),
    CreateCase("createspecificobj-without-uuid",
               lambda a, k: a.grant(P.CreateSpecificObj, k), False, 403),
]


@pytest.mark.parametrize("case", CREATE_CASES, ids=[c.name for c in CREATE_CASES])
def test_create_object_acl(actor: Actor, admin: Api, case: CreateCase) -> None:
    klass = make_class(admin)
    case.grants(actor, klass)
    wanted = str(uuid.uuid4())
    body = {"class": klass} | ({"uuid": wanted} if case.with_uuid else {})
    r = actor.basic().post("/v2/object", json=body)
    assert r.status_code == case.status, r.text
    if r.status_code == 201:
        reg = r.json()
        assert reg["class"] == klass and reg["owner"] == actor.uuid
        assert not case.with_uuid or reg["uuid"] == wanted
        assert direct_members(admin, klass) == [reg["uuid"]]
    else:
        assert direct_members(admin, klass) == []
        assert not exists(admin, wanted)


@dataclass(frozen=True)
class DeleteCase:
    name: str
    grants: Callable[[Actor, str, str], object]  # (actor, object, its class)
    owned: bool
    status: int


DELETE_CASES = [
    DeleteCase("no-grant", lambda a, o, k: None, False, 403),
    DeleteCase("deleteobj-on-object", lambda a, o, k: a.grant(P.DeleteObj, o), False, 204),
    DeleteCase("deleteobj-on-other-object",
               lambda a, o, k: a.grant(P.DeleteObj, make_object(a.admin, k)), False, 403),
    DeleteCase("deleteobj-wildcard", lambda a, o, k: a.grant(P.DeleteObj, NULL), False, 204),
    DeleteCase("deleteobj-plural-on-its-class",
               lambda a, o, k: a.grant(P.DeleteObj, k, plural=True), False, 204),
    DeleteCase("deleteobj-on-its-class-not-plural",
               lambda a, o, k: a.grant(P.DeleteObj, k), False, 403),
    DeleteCase("deleteobj-mine-owned", lambda a, o, k: a.grant(P.DeleteObj, S.Mine),
               True, 204),
    DeleteCase("deleteobj-mine-not-owned", lambda a, o, k: a.grant(P.DeleteObj, S.Mine),
               False, 403),
    DeleteCase("owning-is-not-enough", lambda a, o, k: None, True, 403),
    DeleteCase("readapp-is-not-deleteobj", lambda a, o, k: a.grant(P.ReadApp, o), False, 403),
]


@pytest.mark.parametrize("case", DELETE_CASES, ids=[c.name for c in DELETE_CASES])
def test_delete_object_acl(actor: Actor, admin: Api, case: DeleteCase) -> None:
    klass = make_class(admin)
    body = {"class": klass} | ({"owner": actor.uuid} if case.owned else {})
    r = admin.post("/v2/object", json=body)
    assert r.status_code == 201, r.text
    obj = r.json()["uuid"]
    case.grants(actor, obj, klass)
    r = actor.basic().delete(f"/v2/object/{obj}")
    assert r.status_code == case.status, r.text
    assert exists(admin, obj) == (case.status != 204)


@dataclass(frozen=True)
class MemberCase:
    name: str
    grants: Callable[[Actor, str, str], object]  # (actor, class, object)
    self_member: bool  # the object is the actor itself
    status: int


MEMBER_CASES = [
    MemberCase("no-grant", lambda a, k, o: None, False, 403),
    MemberCase("writemembers-only", lambda a, k, o: a.grant(P.WriteMembers, k), False, 403),
    MemberCase("writememberships-only", lambda a, k, o: a.grant(P.WriteMemberships, o),
               False, 403),
    MemberCase("both", lambda a, k, o: (a.grant(P.WriteMembers, k),
                                        a.grant(P.WriteMemberships, o)), False, 204),
    MemberCase("swapped-targets", lambda a, k, o: (a.grant(P.WriteMembers, o),
                                                   a.grant(P.WriteMemberships, k)), False, 403),
    MemberCase("both-wildcard", lambda a, k, o: (a.grant(P.WriteMembers, NULL),
                                                 a.grant(P.WriteMemberships, NULL)), False, 204),
    MemberCase("memberships-of-self", lambda a, k, o: (a.grant(P.WriteMembers, k),
                                                       a.grant(P.WriteMemberships, S.Self)),
               True, 204),
    MemberCase("self-is-only-self", lambda a, k, o: (a.grant(P.WriteMembers, k),
                                                     a.grant(P.WriteMemberships, S.Self)),
               False, 403),
]


@pytest.mark.parametrize("method", ["PUT", "DELETE"])
@pytest.mark.parametrize("case", MEMBER_CASES, ids=[c.name for c in MEMBER_CASES])
def test_class_membership_acl(actor: Actor, admin: Api, case: MemberCase, method: str) -> None:
    klass = make_class(admin)
    obj = actor.uuid if case.self_member else make_object(admin, C.Device)
    if method == "DELETE":
        add_member(admin, klass, obj)
    case.grants(actor, klass, obj)
    r = actor.basic().request(method, f"/v2/class/{klass}/direct/member/{obj}")
    assert r.status_code == case.status, r.text
    member_now = (method == "PUT") == (case.status == 204)
    assert (obj in direct_members(admin, klass)) == member_now
    if case.self_member:  # leave the shared actor in no stray class
        admin.delete(f"/v2/class/{klass}/direct/member/{obj}")


@dataclass(frozen=True)
class ReadCase:
    name: str
    path: Callable[[str], str]  # class -> path
    grants: Callable[[Actor, str], object]
    status: int


READ_CASES = [
    ReadCase("list-objects-ungranted", lambda k: "/v2/object", lambda a, k: None, 403),
    ReadCase("list-objects-listobj-null", lambda k: "/v2/object",
             lambda a, k: a.grant(P.ListObj, NULL), 200),
    ReadCase("list-objects-listobj-elsewhere", lambda k: "/v2/object",
             lambda a, k: a.grant(P.ListObj, k), 403),
    ReadCase("list-objects-via-group", lambda k: "/v2/object",
             lambda a, k: a.grant(P.All, NULL), 200),
    ReadCase("members-ungranted", lambda k: f"/v2/class/{k}/member", lambda a, k: None, 403),
    ReadCase("members-readmembers", lambda k: f"/v2/class/{k}/member",
             lambda a, k: a.grant(P.ReadMembers, k), 200),
    ReadCase("members-readsubclasses", lambda k: f"/v2/class/{k}/member",
             lambda a, k: a.grant(P.ReadSubclasses, k), 403),
    ReadCase("subclasses-readsubclasses", lambda k: f"/v2/class/{k}/subclass",
             lambda a, k: a.grant(P.ReadSubclasses, k), 200),
    ReadCase("class-summary-needs-both", lambda k: f"/v2/class/{k}",
             lambda a, k: a.grant(P.ReadMembers, k), 403),
    ReadCase("class-summary-both", lambda k: f"/v2/class/{k}",
             lambda a, k: (a.grant(P.ReadMembers, k), a.grant(P.ReadSubclasses, k)), 200),
    ReadCase("direct-members-need-writemembers", lambda k: f"/v2/class/{k}/direct/member",
             lambda a, k: a.grant(P.ReadMembers, k), 403),
    ReadCase("direct-members-writemembers", lambda k: f"/v2/class/{k}/direct/member",
             lambda a, k: a.grant(P.WriteMembers, k), 200),
]


@pytest.mark.parametrize("case", READ_CASES, ids=[c.name for c in READ_CASES])
def test_read_routes_acl(actor: Actor, admin: Api, case: ReadCase) -> None:
    klass = make_class(admin)
    case.grants(actor, klass)
    r = actor.basic().get(case.path(klass))
    assert r.status_code == case.status, r.text


# -- authentication on every route ---------------------------------------------------------
# Fixed (not random) so that every xdist worker collects the same test ids.
_A, _O = (str(uuid.uuid5(uuid.NAMESPACE_URL, f"fplus-test-acl/{n}")) for n in ("app", "obj"))
PROTECTED = [
    ("GET", "/v2/object"), ("POST", "/v2/object"), ("DELETE", f"/v2/object/{_O}"),
    ("GET", f"/v2/class/{C.Device}"), ("PUT", f"/v2/class/{C.Device}/direct/member/{_O}"),
    ("GET", "/v2/app"), ("GET", f"/v2/app/{_A}/object"), ("GET", f"/v2/app/{_A}/object/{_O}"),
    ("PUT", f"/v2/app/{_A}/object/{_O}"), ("PATCH", f"/v2/app/{_A}/object/{_O}"),
    ("DELETE", f"/v2/app/{_A}/object/{_O}"), ("POST", "/token"), ("GET", "/v2/whoami"),
    ("GET", "/v2/whoami/uuid"), ("GET", "/v2/principal"), ("POST", "/v2/principal"),
    ("GET", f"/v2/identity/kerberos/{_O}"), ("GET", f"/v2/acl/{_O}"),
    ("POST", "/v2/grant"), ("POST", "/v2/grant/find"), ("GET", f"/v2/grant/{_O}"),
    ("DELETE", f"/v2/grant/{_O}"), ("GET", "/v2/object/not-a-uuid"), ("GET", "/no/such/route"),
]


@pytest.mark.parametrize(("method", "path"), PROTECTED, ids=[f"{m} {p}" for m, p in PROTECTED])
def test_routes_need_credentials(anon: Api, method: str, path: str) -> None:
    r = anon.request(method, path, json={})
    assert r.status_code == 401, r.text
    assert r.headers.get("WWW-Authenticate") == CHALLENGE


@pytest.mark.parametrize("path", ["/ping", "/openapi.yaml"])
def test_public_routes_need_no_credentials(anon: Api, admin: Api, path: str) -> None:
    assert anon.get(path).status_code == 200
    assert admin.get(path).status_code == 200
    bad = bearer(anon.base, "A" * 88).get(path)  # but credentials sent must be valid
    assert bad.status_code == 401 and bad.headers.get("WWW-Authenticate") == CHALLENGE


def test_wrong_method_is_405_with_allow(admin: Api) -> None:
    r = admin.patch("/v2/whoami")
    assert r.status_code == 405 and r.json()["error"]
    assert "GET" in {m.strip() for m in r.headers["Allow"].split(",")}


def test_bearer_and_basic_are_the_same_principal(actor: Actor) -> None:
    assert actor.basic().get("/v2/whoami/uuid").json() == actor.uuid
    assert actor.bearer().get("/v2/whoami/uuid").json() == actor.uuid
    r = actor.basic().get("/v2/whoami/uuid", headers={"Authorization": "bearer " + actor.token})
    assert r.status_code == 200, "auth scheme names are case-insensitive"


# -- token expiry (in-process: the clock is ours to move) ----------------------------------
def _basic(name: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()}


@pytest.fixture(scope="module")
def in_process(tmp_path_factory: pytest.TempPathFactory) -> FlaskClient:
    """A Config Store app served in this process (admin password ``pw``)."""
    store = open_store(tmp_path_factory.mktemp("inproc") / "data", "pw")
    return create_app(store).test_client()


@pytest.mark.parametrize(("age", "status"), [
    (0, 200),
    (credentials.TOKEN_LIFETIME_S - credentials.TOKEN_GRACE_S - 30, 200),
    (credentials.TOKEN_LIFETIME_S - credentials.TOKEN_GRACE_S + 5, 401),  # in its last minute
    (credentials.TOKEN_LIFETIME_S + 5, 401),
    (10 * credentials.TOKEN_LIFETIME_S, 401),
], ids=["fresh", "nearly-expired", "last-minute", "expired", "long-expired"])
def test_bearer_token_expiry(in_process: FlaskClient, monkeypatch: pytest.MonkeyPatch, age: int,
                             status: int) -> None:
    r = in_process.post("/token", headers=_basic("admin", "pw"))
    assert r.status_code == 200
    token = r.get_json()["token"]
    issued = time.time()
    monkeypatch.setattr(credentials.time, "time", lambda: issued + age)
    r = in_process.get("/v2/whoami/uuid", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == status
    if status == 401:
        assert r.headers.get("WWW-Authenticate") == CHALLENGE
    monkeypatch.undo()
    fresh = in_process.post("/token", headers=_basic("admin", "pw")).get_json()["token"]
    assert in_process.get("/v2/whoami/uuid",
                          headers={"Authorization": f"Bearer {fresh}"}).status_code == 200
