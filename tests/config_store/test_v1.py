"""v1 forwards, v1 search, and dump loading."""

from __future__ import annotations

import uuid

import pytest

from fplus.config_store import uuids
from harness.servers import Api
from tests.conftest import grant, make_class, make_object, make_user


@pytest.fixture
def populated(admin: Api, new_app: str) -> dict[str, str]:
    klass = make_class(admin)
    objs = {name: make_object(admin, klass) for name in ("a", "b", "c")}
    admin.put(f"/v2/app/{new_app}/object/{objs['a']}",
              json={"path": "shared/helm", "n": 1, "flag": True, "deep": {"x": "y"}})
    admin.put(f"/v2/app/{new_app}/object/{objs['b']}", json={"path": "cluster/one", "n": 2})
    admin.put(f"/v2/app/{new_app}/object/{objs['c']}", json={"n": 1, "flag": 1})
    return {"app": new_app, "class": klass, **objs}


def test_forwards(admin: Api, populated: dict[str, str]) -> None:
    app, a = populated["app"], populated["a"]
    assert admin.get("/v1/app").json() == admin.get("/v2/app").json()
    assert admin.get(f"/v1/app/{app}/object").json() == admin.get(f"/v2/app/{app}/object").json()
    assert admin.get(f"/v1/app/{app}/object/{a}").json()["path"] == "shared/helm"
    assert admin.get(f"/v1/app/{app}/device/{a}").json()["n"] == 1
    assert admin.get(f"/v1/app/{app}/class/{populated['class']}").status_code == 200
    assert admin.put(f"/v1/app/{app}/config", json={"own": True}).status_code == 201
    assert admin.get(f"/v2/app/{app}/object/{app}").json() == {"own": True}
    assert admin.put(f"/v1/app/{app}/config-schema", json={"type": "object"}).status_code == 201
    assert admin.get(f"/v1/class/{populated['class']}").json() == sorted(
        [populated[k] for k in "abc"])
    assert admin.get(f"/v1/object/{a}").json()["uuid"] == a
    assert admin.post("/v1/app", json={}).status_code == 403
    assert admin.get(f"/v1/app/{app}").status_code == 403


@pytest.mark.parametrize(("query", "expected"), [
    ("path=%22shared%2Fhelm%22", ["a"]),
    ("n=1", ["a", "c"]),
    ("flag=true", ["a"]),  # 1 is not true
    ("path=undefined", ["c"]),
    ("deep.x=%22y%22", ["a"]),
    ("n=1&flag=true", ["a"]),
    ("n=3", []),
])
def test_search(admin: Api, populated: dict[str, str], query: str, expected: list[str]) -> None:
    r = admin.get(f"/v1/app/{populated['app']}/search?{query}")
    assert r.status_code == 200
    assert sorted(r.json()) == sorted(populated[k] for k in expected)


def test_search_select_and_class(admin: Api, populated: dict[str, str]) -> None:
    app, klass = populated["app"], populated["class"]
    r = admin.get(f"/v1/app/{app}/class/{klass}/search?n=1&@p=path&@f=flag")
    assert r.json() == {populated["a"]: {"p": "shared/helm", "f": True},
                        populated["c"]: {"f": 1}}
    other = make_class(admin)
    assert admin.get(f"/v1/app/{app}/class/{other}/search?n=1").json() == []


@pytest.mark.parametrize("query", ["@uuid=path", "bad-key=1", "n={}", "n=[1]", "n=nope"])
def test_search_bad_queries(admin: Api, populated: dict[str, str], query: str) -> None:
    assert admin.get(f"/v1/app/{populated['app']}/search?{query}").status_code == 400


def test_search_needs_read(admin: Api, populated: dict[str, str]) -> None:
    _, user = make_user(admin)
    assert user.get(f"/v1/app/{populated['app']}/search?n=1").status_code == 403


def dump(objects: dict | None = None, configs: dict | None = None) -> dict:
    return {"service": uuids.Service.ConfigDB, "version": 2, "objects": objects or {},
            "configs": configs or {}}


def test_load_dump(admin: Api) -> None:
    new_class, member, app = (str(uuid.uuid4()) for _ in range(3))
    body = dump(
        objects={
            uuids.Class.R1Class: {new_class: {"name": "Loaded class"}},
            uuids.Class.App: {app: {"name": "Loaded app"}},
            new_class: {member: {"name": "Loaded member"}},
        },
        configs={app: {member: {"loaded": True}}})
    assert admin.post("/load", json=body).status_code == 204
    assert admin.get(f"/v2/class/{new_class}/member").json() == [member]
    assert admin.get(f"/v2/app/{app}/object/{member}").json() == {"loaded": True}
    info = admin.get(f"/v2/app/{uuids.App.Info}/object/{member}").json()
    assert info == {"name": "Loaded member"}
    # loading again is idempotent
    assert admin.post("/load", json=body).status_code == 204
    assert admin.get(f"/v2/class/{new_class}/member").json() == [member]


def test_load_enum_and_subclass_are_authoritative(admin: Api) -> None:
    parent, child, a, b = (str(uuid.uuid4()) for _ in range(4))
    base = {uuids.Class.R1Class: {parent: {}, child: {"subclassOf": [parent]}},
            uuids.Class.Device: {a: {}, b: {}}}
    assert admin.post("/load", json=dump(objects=base)).status_code == 204
    assert child in admin.get(f"/v2/class/{parent}/direct/subclass").json()
    assert admin.post("/load", json=dump(objects={uuids.Class.R1Class: {
        child: {"enum": [a, b]}}})).status_code == 204
    assert admin.get(f"/v2/class/{parent}/member").json() == sorted([a, b])
    assert admin.post("/load", json=dump(objects={uuids.Class.R1Class: {
        child: {"enum": [a]}}})).status_code == 204
    assert admin.get(f"/v2/class/{child}/direct/member").json() == [a]


@pytest.mark.parametrize("body", [
    {"service": uuids.Service.ConfigDB, "version": 1},
    {"service": uuids.NULL, "version": 2},
    dump(configs={uuids.App.Registration: {}}),
    dump(objects={uuids.Class.Device: {"not-a-uuid": {}}}),
])
def test_load_rejects_bad_dumps(admin: Api, body: dict) -> None:
    assert admin.post("/load", json=body).status_code == 422


def test_load_is_atomic_for_objects(admin: Api) -> None:
    good, ghost_class = str(uuid.uuid4()), str(uuid.uuid4())
    body = dump(objects={uuids.Class.Device: {good: {}}, ghost_class: {str(uuid.uuid4()): {}}})
    assert admin.post("/load", json=body).status_code == 409
    assert admin.get(f"/v2/object/{good}").status_code == 404


def test_load_needs_explicit_wildcard_grants(admin: Api) -> None:
    user_uuid, user = make_user(admin)
    grant(admin, user_uuid, uuids.ConfigDBPerm.All, uuids.Class.Device, plural=True)
    assert user.post("/load", json=dump()).status_code == 403
    grant(admin, user_uuid, uuids.ConfigDBPerm.All, uuids.NULL)
    assert user.post("/load", json=dump()).status_code == 204
