"""The Config Store export (``GET /v2/dump``): what ``POST /load`` takes, read in full only
with wildcard read grants, and loaded into another Config Store it reproduces the first."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.conftest import grant, make_class, make_object, make_user

P, A = uuids.ConfigDBPerm, uuids.AuthPerm


@pytest.fixture(scope="module")
def two_stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Api, Api]]:
    """Two fresh Config Stores of this module: a source and a restore target."""
    root = tmp_path_factory.mktemp("export")
    first = ConfigStoreProcess(root / "a" / "data").start()
    second = ConfigStoreProcess(root / "b" / "data").start()
    yield (Api(first.url, ("admin", ADMIN_PASSWORD)), Api(second.url, ("admin", ADMIN_PASSWORD)))
    second.stop()
    first.stop()


def _export(api: Api, service: str) -> dict:
    r = api.get(f"/v2/dump?service={service}")
    assert r.status_code == 200, r.text
    return r.json()


def _load(api: Api, body: dict) -> None:
    r = api.post("/load", json=body)
    assert r.status_code == 204, r.text


def test_an_empty_stores_export_loads_into_another(tmp_path: Path) -> None:
    first = ConfigStoreProcess(tmp_path / "a" / "data").start()
    second = ConfigStoreProcess(tmp_path / "b" / "data").start()
    try:
        source, target = (Api(s.url, ("admin", ADMIN_PASSWORD)) for s in (first, second))
        configdb, auth = _export(source, "configdb"), _export(source, "auth")
        assert configdb["service"] == uuids.Service.ConfigDB and configdb["version"] == 2
        assert auth == {"service": uuids.Service.Auth, "version": 2, "principals": {},
                        "identities": {}, "grants": {}, "objectGrants": []}
        _load(target, configdb)
        _load(target, auth)
        assert _export(target, "configdb") == configdb
        assert _export(target, "auth") == auth
    finally:
        second.stop()
        first.stop()


def test_export_needs_wildcard_read_grants(two_stores: tuple[Api, Api]) -> None:
    source, _ = two_stores
    who, api = make_user(source)
    assert api.get("/v2/dump?service=configdb").status_code == 403
    for perm in (P.ListObj, P.ReadMembers, P.ReadSubclasses):
        grant(source, who, perm, uuids.NULL)
    grant(source, who, P.ReadApp, uuids.Class.App, plural=True)  # every app, but not wildcard
    r = api.get("/v2/dump?service=configdb")
    assert r.status_code == 403 and "wildcard" in r.json()["error"]
    grant(source, who, P.ReadApp, uuids.NULL)
    assert api.get("/v2/dump?service=configdb").status_code == 200
    assert api.get("/v2/dump?service=auth").status_code == 403
    r = source.get("/v2/dump?service=everything")
    assert r.status_code == 422 and "configdb or auth" in r.json()["error"]
    assert source.get("/v2/dump").status_code == 422


def test_export_reproduces_objects_owners_principals_and_grants(
        two_stores: tuple[Api, Api]) -> None:
    source, target = two_stores
    group = make_class(source)
    owner, owner_api = make_user(source, password="owner-password-1")
    grant(source, owner, P.CreateObj, uuids.Class.Device)
    thing = make_object(owner_api, uuids.Class.Device)  # owned by ``owner``
    r = source.put(f"/v2/class/{group}/direct/member/{owner}")
    assert r.status_code == 204, r.text
    r = source.put(f"/v2/app/{uuids.App.Info}/object/{thing}", json={"name": "a thing"})
    assert r.status_code in (201, 204), r.text
    grant(source, owner, P.ReadApp, uuids.App.Info, obj=thing)  # limited to one object
    grant(source, group, P.ReadApp, uuids.App.Info, plural=True)
    r = source.put(f"/v2/principal/{owner}/kerberos", json="owner@EXAMPLE.ORG")
    assert r.status_code == 204, r.text
    token = owner_api.post("/token", json={})
    assert token.status_code == 200, token.text
    root = source.get("/v2/whoami/uuid").json()
    r = source.post("/v2/object", json={"class": uuids.Class.Device, "owner": root})
    assert r.status_code == 201, r.text
    rooted = r.json()["uuid"]  # the root principal, which is never exported, owns it

    configdb, auth = _export(source, "configdb"), _export(source, "auth")
    assert "password" not in str(auth).replace("passwordHash", "")
    assert auth["principals"][owner]["passwordHash"].startswith("$argon2")
    _load(target, configdb)
    _load(target, auth)

    r = target.get(f"/v2/app/{uuids.App.Registration}/object/{thing}")
    assert r.json()["owner"] == owner
    r = target.get(f"/v2/app/{uuids.App.Registration}/object/{rooted}")
    assert r.json()["owner"] == uuids.Special.Unowned  # the target's root made it
    assert target.get(f"/v2/class/{group}/direct/member/{owner}").status_code == 204
    assert target.get(f"/v2/app/{uuids.App.Info}/object/{thing}").json() == {"name": "a thing"}
    assert target.get(f"/v2/principal/{owner}").json()["kerberos"] == "owner@EXAMPLE.ORG"
    restored = Api(target.base, (owner_api.auth[0], "owner-password-1"))
    assert restored.get(f"/v2/app/{uuids.App.Info}/object/{thing}").status_code == 200
    bearer = Api(target.base)
    bearer.headers["Authorization"] = f"Bearer {token.json()['token']}"
    assert bearer.get("/v2/whoami/uuid").status_code == 401  # tokens do not travel
    assert _export(target, "auth") == auth
    assert "owner" not in configdb["objects"][uuids.Class.Device][rooted]
    configdb["objects"][uuids.Class.Device][rooted]["owner"] = uuids.Special.Unowned
    assert _export(target, "configdb") == configdb


def test_a_dump_may_name_an_object_before_listing_it(two_stores: tuple[Api, Api]) -> None:
    target, _ = two_stores  # the source: the round-trip test exports whatever it holds
    parent, child, member = (str(uuid.uuid4()) for _ in range(3))
    _load(target, {"service": uuids.Service.ConfigDB, "version": 2, "objects": {
        uuids.Class.R1Class: {child: {"subclassOf": [parent]}, parent: {}},
        child: {member: {}}}})
    assert target.get(f"/v2/class/{parent}/direct/subclass/{child}").status_code == 204
    assert target.get(f"/v2/class/{parent}/member/{member}").status_code == 204


def test_loading_principals_is_refused_whole(two_stores: tuple[Api, Api]) -> None:
    """A bad hash is 422, a taken name 409, no WriteKerberos 403: nothing is written."""
    target, _ = two_stores  # the source: the round-trip test exports whatever it holds
    fresh = make_object(target, uuids.Class.Principal)
    taken, _ = make_user(target)
    name = f"restored-{uuid.uuid4().hex[:8]}"

    def dump(principals: dict) -> dict:
        return {"service": uuids.Service.Auth, "version": 2, "principals": principals,
                "grants": {fresh: {P.ReadApp: {uuids.App.Info: False}}}}

    r = target.post("/load", json=dump({fresh: {"name": name, "passwordHash": "plain"}}))
    assert r.status_code == 422 and "passwordHash" in r.text, r.text
    taken_name = target.get(f"/v2/principal/{taken}").json()["login"]
    r = target.post("/load", json=dump({fresh: {"name": taken_name}}))
    assert r.status_code == 409, r.text
    who, api = make_user(target)
    grant(target, who, A.WriteACL, P.ReadApp)
    grant(target, who, P.ReadApp, uuids.App.Info)
    r = api.post("/load", json=dump({fresh: {"name": name}}))
    assert r.status_code == 403 and "WriteKerberos" in r.text, r.text
    assert target.get(f"/v2/principal/{fresh}").status_code == 404
    assert target.post("/v2/grant/find", json={"principal": fresh}).json() == []
