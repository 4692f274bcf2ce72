"""UUIDs in any case are accepted, in path segments and in bodies, and stored lower-case."""

from __future__ import annotations

import uuid

from fplus.config_store import uuids
from harness.servers import Api
from tests.conftest import grant, make_class, make_object

MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}


def test_an_upper_case_path_reaches_the_lower_case_entry(admin: Api, new_app: str,
                                                         new_obj: str) -> None:
    upper = f"/v2/app/{new_app.upper()}/object/{new_obj.upper()}"
    lower = f"/v2/app/{new_app}/object/{new_obj}"
    r = admin.put(upper, json={"replicas": 1})
    assert r.status_code == 201, r.text
    got = admin.get(lower)
    assert got.json() == {"replicas": 1} and got.headers["ETag"] == r.headers["ETag"]
    assert admin.get(upper).json() == {"replicas": 1}
    r = admin.patch(f"/v2/app/{new_app}/object/{new_obj.upper()}",
                    json={"replicas": 2}, headers=MERGE_PATCH)
    assert r.status_code == 204, r.text
    assert admin.get(lower).json() == {"replicas": 2}
    assert admin.get(f"/v2/app/{new_app.upper()}/object").json() == [new_obj]
    assert admin.get(f"/v1/app/{new_app.upper()}/object/{new_obj.upper()}").json() == {
        "replicas": 2}
    assert admin.delete(upper).status_code == 204
    assert admin.get(lower).status_code == 404


def test_mixed_case_object_and_class_routes(admin: Api) -> None:
    klass = make_class(admin)
    obj = make_object(admin, klass)
    mixed = obj[:8].upper() + obj[8:]
    assert admin.get(f"/v2/object/{mixed}").json()["uuid"] == obj
    assert admin.get(f"/v2/class/{klass.upper()}/member/{mixed}").status_code == 204
    assert obj in admin.get(f"/v2/class/{klass.upper()}/member").json()


def test_an_upper_case_class_creates_a_lower_case_object(admin: Api) -> None:
    r = admin.post("/v2/object", json={"class": uuids.Class.Device.upper()})
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["class"] == uuids.Class.Device
    assert created["uuid"] == created["uuid"].lower()
    assert admin.get(f"/v2/object/{created['uuid']}").json() == created


def test_an_upper_case_uuid_in_the_body_is_stored_lower_case(admin: Api) -> None:
    wanted = str(uuid.uuid4())
    r = admin.post("/v2/object", json={"class": uuids.Class.Device.upper(),
                                       "uuid": wanted.upper()})
    assert r.status_code == 201, r.text
    assert r.json()["uuid"] == wanted and r.json()["class"] == uuids.Class.Device
    assert wanted in admin.get("/v2/object").json()
    again = admin.post("/v2/object", json={"class": uuids.Class.Device, "uuid": wanted})
    assert again.status_code == 200 and again.json()["uuid"] == wanted


def test_registration_bodies_name_objects_in_any_case(admin: Api, new_obj: str) -> None:
    url = f"/v2/app/{uuids.App.Registration}/object/{new_obj}"
    reg = admin.get(url).json()
    r = admin.put(url, json=reg | {"uuid": new_obj.upper(), "class": reg["class"].upper()})
    assert r.status_code == 204, r.text
    r = admin.patch(url, json={"uuid": new_obj.upper()}, headers=MERGE_PATCH)
    assert r.status_code == 204, r.text
    assert admin.get(url).json() == reg


def test_principals_and_grants_take_upper_case_uuids(admin: Api) -> None:
    wanted, name = str(uuid.uuid4()), f"case-{uuid.uuid4().hex[:8]}"
    r = admin.post("/v2/principal", json={"name": name, "uuid": wanted.upper(),
                                          "class": uuids.Class.Principal.upper()})
    assert r.status_code == 201 and r.json()["uuid"] == wanted, r.text
    assert admin.get(f"/v2/identity/login/{name}").json() == wanted
    r = admin.post("/v2/grant", json={"principal": wanted.upper(),
                                      "permission": uuids.ConfigDBPerm.ReadApp.upper(),
                                      "target": uuids.NULL, "plural": False})
    assert r.status_code == 201, r.text
    stored = admin.get(f"/v2/grant/{r.json()['uuid'].upper()}").json()
    assert stored["principal"] == wanted and stored["permission"] == uuids.ConfigDBPerm.ReadApp
    found = admin.post("/v2/grant/find", json={"principal": wanted.upper()}).json()
    assert found == [r.json()["uuid"]]
    assert grant(admin, wanted, uuids.ConfigDBPerm.ReadApp, uuids.NULL) == r.json()["uuid"]
    assert admin.get(f"/v2/principal/{wanted.upper()}?detail=true").json() == {
        "uuid": wanted, "name": name}
    assert admin.get(f"/v2/principal/{wanted.upper()}").json() == {"login": name,
                                                                   "uuid": wanted}
    assert admin.get(f"/v2/acl/{wanted.upper()}").json() == [
        {"permission": uuids.ConfigDBPerm.ReadApp, "target": uuids.NULL}]


def test_a_dump_may_name_objects_in_upper_case(admin: Api) -> None:
    obj, app = str(uuid.uuid4()), make_object(admin, uuids.Class.App)
    dump = {"service": uuids.Service.ConfigDB, "version": 2,
            "objects": {uuids.Class.Device.upper(): {obj.upper(): {"name": "loaded"}}},
            "configs": {app.upper(): {obj.upper(): {"Value": "Kept-As-Is"}}}}
    r = admin.post("/load", json=dump)
    assert r.status_code == 204, r.text
    assert admin.get(f"/v2/object/{obj}").json()["class"] == uuids.Class.Device
    assert admin.get(f"/v2/app/{app}/object/{obj}").json() == {"Value": "Kept-As-Is"}
    assert admin.get(f"/v2/app/{uuids.App.Info}/object/{obj}").json() == {"name": "loaded"}


def test_a_non_uuid_segment_is_still_410(admin: Api, new_app: str) -> None:
    fullwidth = "\uff21" + new_app[1:]  # a non-ASCII letter A
    for bad in ("NOT-A-UUID", new_app.upper() + "0", new_app.replace("-", ""), fullwidth):
        assert admin.get(f"/v2/app/{bad}/object").status_code == 410
