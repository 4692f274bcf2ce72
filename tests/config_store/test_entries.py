"""Config entries over real HTTP: PUT/GET/HEAD/PATCH/DELETE, ETags, merge-patch, schemas."""

from __future__ import annotations

import json

import pytest
import requests

from fplus.config_store import uuids
from harness.servers import Api
from tests.conftest import make_object

SCHEMA_APP = uuids.App.ConfigSchema


def entry(app: str, obj: str) -> str:
    return f"/v2/app/{app}/object/{obj}"


def test_put_creates_then_updates_and_get_returns_value_with_etag(admin: Api, new_app: str,
                                                                   new_obj: str) -> None:
    r = admin.put(entry(new_app, new_obj), json={"a": 1})
    assert r.status_code == 201
    first = admin.get(entry(new_app, new_obj))
    assert first.status_code == 200 and first.json() == {"a": 1}
    assert first.headers["ETag"] == r.headers["ETag"]
    r = admin.put(entry(new_app, new_obj), json={"a": 2})
    assert r.status_code == 204
    second = admin.get(entry(new_app, new_obj))
    assert second.json() == {"a": 2} and second.headers["ETag"] != first.headers["ETag"]


def test_unchanged_put_keeps_etag(admin: Api, new_app: str, new_obj: str) -> None:
    admin.put(entry(new_app, new_obj), json={"b": [1, 2], "a": True})
    etag = admin.get(entry(new_app, new_obj)).headers["ETag"]
    r = admin.put(entry(new_app, new_obj), json={"a": True, "b": [1, 2]})
    assert r.status_code == 204 and r.headers["ETag"] == etag
    # 1 is not true: a type change is a change
    admin.put(entry(new_app, new_obj), json={"a": 1, "b": [1, 2]})
    assert admin.get(entry(new_app, new_obj)).headers["ETag"] != etag


@pytest.mark.parametrize("value", [0, False, "", None, [], "text", 3.5])
def test_scalars_and_falsy_values_round_trip(admin: Api, new_app: str, new_obj: str,
                                             value: object) -> None:
    r = admin.put(entry(new_app, new_obj), data=json.dumps(value),
                  headers={"Content-Type": "application/json"})
    assert r.status_code == 201
    got = admin.get(entry(new_app, new_obj))
    assert got.status_code == 200 and got.json() == value


def test_head_has_etag_and_no_body(admin: Api, new_app: str, new_obj: str) -> None:
    admin.put(entry(new_app, new_obj), json={"x": 1})
    r = admin.head(entry(new_app, new_obj))
    assert r.status_code == 200 and r.headers["ETag"] and r.content == b""


def test_delete_removes_entry(admin: Api, new_app: str, new_obj: str) -> None:
    admin.put(entry(new_app, new_obj), json={})
    assert admin.delete(entry(new_app, new_obj)).status_code == 204
    assert admin.get(entry(new_app, new_obj)).status_code == 404
    assert admin.delete(entry(new_app, new_obj)).status_code == 404


class TestConditionalRequests:
    """RFC 7232 as ACS implements it, with the GET If-Match quirk fixed (412, not 304)."""

    @pytest.fixture
    def tagged(self, admin: Api, new_app: str, new_obj: str) -> tuple[str, str]:
        admin.put(entry(new_app, new_obj), json={"v": 1})
        return entry(new_app, new_obj), admin.get(entry(new_app, new_obj)).headers["ETag"]

    @pytest.mark.parametrize(("header", "value", "status"), [
        ("If-None-Match", "{etag}", 304),
        ("If-None-Match", "*", 304),
        ("If-None-Match", 'W/{etag}', 304),
        ("If-None-Match", '"other"', 200),
        ("If-Match", "{etag}", 200),
        ("If-Match", '"other"', 412),
        ("If-Match", "W/{etag}", 412),
        ("If-Match", '"other", {etag}', 200),
        ("If-Match", "not-quoted", 400),
    ])
    def test_get(self, admin: Api, tagged: tuple[str, str], header: str, value: str,
                 status: int) -> None:
        url, etag = tagged
        r = admin.get(url, headers={header: value.format(etag=etag)})
        assert r.status_code == status
        if status == 304:
            assert r.headers["ETag"] == etag

    @pytest.mark.parametrize(("header", "value", "status"), [
        ("If-Match", "{etag}", 204),
        ("If-Match", '"stale"', 412),
        ("If-None-Match", "*", 412),
        ("If-None-Match", '"stale"', 204),
    ])
    def test_put_patch_delete(self, admin: Api, tagged: tuple[str, str], header: str,
                              value: str, status: int) -> None:
        url, etag = tagged
        headers = {header: value.format(etag=etag)}
        assert admin.put(url, json={"v": 2}, headers=headers).status_code == status
        expected = {"v": 2} if status == 204 else {"v": 1}
        assert admin.get(url).json() == expected

    def test_if_none_match_star_creates_only_once(self, admin: Api, new_app: str,
                                                  new_obj: str) -> None:
        url = entry(new_app, new_obj)
        assert admin.put(url, json=1, headers={"If-None-Match": "*"}).status_code == 201
        assert admin.put(url, json=2, headers={"If-None-Match": "*"}).status_code == 412
        assert admin.get(url).json() == 1

    def test_if_match_star_needs_existing(self, admin: Api, new_app: str, new_obj: str) -> None:
        url = entry(new_app, new_obj)
        assert admin.put(url, json=1, headers={"If-Match": "*"}).status_code == 412
        assert admin.get(url).status_code == 404

    def test_stale_delete_refused(self, admin: Api, tagged: tuple[str, str]) -> None:
        url, _ = tagged
        assert admin.delete(url, headers={"If-Match": '"stale"'}).status_code == 412
        assert admin.get(url).status_code == 200


class TestMergePatch:
    MERGE = {"Content-Type": "application/merge-patch+json"}

    def patch(self, admin: Api, url: str, doc: object, **headers: str) -> requests.Response:
        return admin.patch(url, data=json.dumps(doc), headers=self.MERGE | headers)

    def test_rfc7386_semantics(self, admin: Api, new_app: str, new_obj: str) -> None:
        url = entry(new_app, new_obj)
        admin.put(url, json={"a": {"b": 1, "c": 2}, "list": [1, 2], "keep": "x"})
        r = self.patch(admin, url, {"a": {"b": None, "d": 4}, "list": [3], "new": {"k": None}})
        assert r.status_code == 204
        assert admin.get(url).json() == {"a": {"c": 2, "d": 4}, "list": [3], "keep": "x",
                                          "new": {}}

    def test_patch_creates_missing_entry(self, admin: Api, new_app: str, new_obj: str) -> None:
        url = entry(new_app, new_obj)
        assert self.patch(admin, url, {"x": 1}).status_code == 204
        assert admin.get(url).json() == {"x": 1}

    def test_patch_on_non_object_is_409(self, admin: Api, new_app: str, new_obj: str) -> None:
        url = entry(new_app, new_obj)
        admin.put(url, json=[1, 2])
        assert self.patch(admin, url, {"x": 1}).status_code == 409
        assert admin.get(url).json() == [1, 2]

    @pytest.mark.parametrize("ctype", ["application/json", "text/plain"])
    def test_wrong_content_type_is_415(self, admin: Api, new_app: str, new_obj: str,
                                       ctype: str) -> None:
        url = entry(new_app, new_obj)
        r = admin.patch(url, data='{"x": 1}', headers={"Content-Type": ctype})
        assert r.status_code == 415
        assert admin.get(url).status_code == 404

    def test_stale_if_match_refused(self, admin: Api, new_app: str, new_obj: str) -> None:
        url = entry(new_app, new_obj)
        admin.put(url, json={"x": 1})
        assert self.patch(admin, url, {"x": 2}, **{"If-Match": '"stale"'}).status_code == 412
        assert admin.get(url).json() == {"x": 1}


class TestSchemas:
    SCHEMA = {"type": "object", "required": ["name"], "additionalProperties": False,
              "properties": {"name": {"type": "string", "maxLength": 10},
                             "when": {"type": "string", "format": "date-time"}}}

    @pytest.fixture
    def schema_app(self, admin: Api, new_app: str) -> str:
        assert admin.put(entry(SCHEMA_APP, new_app), json=self.SCHEMA).status_code == 201
        return new_app

    @pytest.mark.parametrize("value", [{}, {"name": 5}, {"name": "x", "extra": 1},
                                       {"name": "x" * 11}, {"name": "x", "when": "yesterday"}])
    def test_invalid_put_is_422_and_not_written(self, admin: Api, schema_app: str,
                                                new_obj: str, value: object) -> None:
        r = admin.put(entry(schema_app, new_obj), json=value)
        assert r.status_code == 422 and r.json()["errors"]
        assert admin.get(entry(schema_app, new_obj)).status_code == 404

    def test_valid_put_and_invalid_patch(self, admin: Api, schema_app: str,
                                         new_obj: str) -> None:
        url = entry(schema_app, new_obj)
        assert admin.put(url, json={"name": "ok"}).status_code == 201
        r = admin.patch(url, data='{"name": null}',
                        headers={"Content-Type": "application/merge-patch+json"})
        assert r.status_code == 422
        assert admin.get(url).json() == {"name": "ok"}

    def test_invalid_schema_is_422(self, admin: Api, new_app: str) -> None:
        r = admin.put(entry(SCHEMA_APP, new_app), json={"type": "no-such-type"})
        assert r.status_code == 422
        assert admin.get(entry(SCHEMA_APP, new_app)).status_code == 404

    def test_schema_rejecting_existing_entries_is_409(self, admin: Api, new_app: str,
                                                      new_obj: str) -> None:
        admin.put(entry(new_app, new_obj), json={"name": 1})
        r = admin.put(entry(SCHEMA_APP, new_app), json=self.SCHEMA)
        assert r.status_code == 409 and r.json() == [new_obj]
        assert admin.get(entry(SCHEMA_APP, new_app)).status_code == 404


class TestBadInput:
    @pytest.mark.parametrize("path", [
        "/v2/app/NOT-A-UUID/object/{obj}", "/v2/app/{app}/object/etc",
        "/v2/object/1234", "/v2/class/x/member",
    ])
    def test_malformed_uuid_is_410(self, admin: Api, new_app: str, new_obj: str,
                                   path: str) -> None:
        url = path.format(app=new_app, obj=new_obj)
        assert admin.get(url).status_code == 410
        assert admin.put(url, json={}).status_code in (405, 410)

    def test_encoded_traversal_is_refused(self, admin: Api, new_app: str) -> None:
        url = f"/v2/app/{new_app}/object/..%2F..%2Fetc"
        assert admin.put(url, json={}).status_code in (404, 405, 410)
        assert admin.get(f"/v2/app/{new_app}/object").json() == []

    def test_invalid_json_is_400(self, admin: Api, new_app: str, new_obj: str) -> None:
        r = admin.put(entry(new_app, new_obj), data="{nope",
                      headers={"Content-Type": "application/json"})
        assert r.status_code == 400
        assert admin.get(entry(new_app, new_obj)).status_code == 404

    def test_put_without_json_content_type_is_415(self, admin: Api, new_app: str,
                                                  new_obj: str) -> None:
        r = admin.put(entry(new_app, new_obj), data="{}", headers={"Content-Type": "text/plain"})
        assert r.status_code == 415
        assert admin.get(entry(new_app, new_obj)).status_code == 404

    def test_oversized_body_is_413(self, admin: Api, new_app: str, new_obj: str) -> None:
        big = json.dumps({"x": "y" * (1024 * 1024)})
        r = admin.put(entry(new_app, new_obj), data=big,
                      headers={"Content-Type": "application/json"})
        assert r.status_code == 413
        assert admin.get(entry(new_app, new_obj)).status_code == 404

    def test_unknown_app_or_object_is_404(self, admin: Api, new_app: str, new_obj: str) -> None:
        ghost = "0badc0de-0000-4000-8000-000000000000"
        assert admin.put(entry(ghost, new_obj), json={}).status_code == 404
        assert admin.put(entry(new_app, ghost), json={}).status_code == 404
        assert admin.get(f"/v2/app/{ghost}/object").status_code == 404


def test_registration_is_virtual_and_protected(admin: Api) -> None:
    obj = make_object(admin, uuids.Class.Device)
    url = entry(uuids.App.Registration, obj)
    reg = admin.get(url).json()
    assert reg == {"uuid": obj, "rank": 0, "class": uuids.Class.Device,
                   "owner": uuids.Special.Unowned, "deleted": False, "strict": True}
    assert admin.delete(url).status_code == 405
    assert admin.put(url, json=reg | {"uuid": uuids.NULL}).status_code == 409
    assert admin.put(url, json=reg | {"rank": 1}).status_code == 409
    assert admin.put(url, json=reg | {"bogus": 1}).status_code == 422
    r = admin.patch(url, data='{"deleted": true}',
                    headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 204
    assert admin.get(url).json()["deleted"] is True


def test_app_listings(admin: Api, new_app: str) -> None:
    klass = make_object(admin, uuids.Class.R1Class)
    inside = make_object(admin, klass)
    outside = make_object(admin, uuids.Class.Device)
    for obj in (inside, outside):
        admin.put(entry(new_app, obj), json={})
    assert admin.get(f"/v2/app/{new_app}/object").json() == sorted([inside, outside])
    assert admin.get(f"/v2/app/{new_app}/class/{klass}").json() == [inside]
