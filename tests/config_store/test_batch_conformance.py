"""``POST /v2/batch`` conformance: every kind of operation answers in a batch what the
single request answers (status, whether there is an ETag and which, the body), compared
request by request on the same store: once sent one by one over fresh objects, once as one
batch over others. Refusals likewise, each alone in a batch that then writes nothing. On both
storage backends (``config_store``)."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.conftest import make_object

P = uuids.ConfigDBPerm
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class World:
    """The objects one run of the operations works on, and their names for comparing."""

    app: str
    klass: str
    obj: str
    principal: str
    name: str

    def names(self) -> dict[str, str]:
        return {self.app: "<app>", self.klass: "<class>", self.obj: "<obj>",
                self.principal: "<principal>", self.name: "<name>"}


def _world(admin: Api) -> World:
    return World(make_object(admin, uuids.Class.App), make_object(admin, uuids.Class.R1Class),
                 str(uuid.uuid4()), str(uuid.uuid4()), f"conf-{uuid.uuid4().hex[:10]}")


def _operations(w: World) -> list[dict[str, Any]]:
    """Each kind of operation, in an order where each succeeds."""
    entry, reg = f"/v2/app/{w.app}/object/{w.obj}", f"/v2/app/{uuids.App.Registration}"
    member = f"/v2/class/{w.klass}/direct/member/{w.obj}"
    return [
        {"method": "POST", "path": "/v2/object",
         "body": {"class": uuids.Class.Device, "uuid": w.obj}},
        {"method": "POST", "path": "/v2/object",  # exists: 200
         "body": {"class": uuids.Class.Device, "uuid": w.obj}},
        {"method": "GET", "path": f"/v2/object/{w.obj}"},
        {"method": "GET", "path": f"{reg}/object/{w.obj}"},
        {"method": "PUT", "path": entry, "body": {"n": 1}, "headers": {"If-None-Match": "*"}},
        {"method": "PUT", "path": entry, "body": {"n": 1}},  # unchanged: 204, same ETag
        {"method": "PATCH", "path": entry, "body": {"m": [1, "x"], "n": None}},
        {"method": "GET", "path": entry},
        {"method": "GET", "path": f"/v2/app/{w.app}/object"},
        {"method": "PUT", "path": member},
        {"method": "GET", "path": f"/v2/class/{w.klass}/direct/member"},
        {"method": "GET", "path": f"/v2/class/{w.klass}/member/{w.obj}"},
        {"method": "DELETE", "path": member},
        {"method": "POST", "path": "/v2/principal",
         "body": {"name": w.name, "uuid": w.principal, "label": "Conformance",
                  "groups": [w.klass]}},
        {"method": "GET", "path": f"/v2/principal/{w.principal}"},
        {"method": "PUT", "path": f"/v2/principal/{w.principal}/kerberos",
         "body": f"{w.name}@EXAMPLE.TEST"},
        {"method": "GET", "path": f"/v2/principal/{w.principal}/kerberos"},
        {"method": "POST", "path": "/v2/grant",
         "body": {"principal": w.principal, "permission": P.ReadApp, "target": w.app,
                  "plural": False}},
        {"method": "GET", "path": f"/v2/acl/{w.principal}"},
        {"method": "GET", "path": f"/v2/principal/{w.principal}/groups"},
        {"method": "DELETE", "path": f"/v2/principal/{w.principal}/kerberos"},
        {"method": "DELETE", "path": f"/v2/principal/{w.principal}"},
        {"method": "DELETE", "path": entry},
        {"method": "GET", "path": entry, "accept": [404]},
        {"method": "DELETE", "path": f"/v2/object/{w.obj}"},
    ]


def _refusals(w: World, existing: str, stale: str) -> list[dict[str, Any]]:
    """Operations the single routes refuse, each with its own status (``stale``: an ETag
    ``existing``'s entry had before)."""
    entry = f"/v2/app/{w.app}/object/{existing}"
    return [
        {"method": "GET", "path": f"/v2/app/{w.app}/object/{w.obj}"},  # 404
        {"method": "PUT", "path": entry, "body": 1,
         "headers": {"If-Match": f'"{uuid.uuid4()}"'}},  # 412
        {"method": "PUT", "path": entry, "body": 1, "headers": {"If-None-Match": "*"}},  # 412
        {"method": "PATCH", "path": entry, "body": {"a": 1},
         "headers": {"If-Match": f'"{uuid.uuid4()}"'}},  # 412
        {"method": "DELETE", "path": entry, "headers": {"If-Match": f'"{uuid.uuid4()}"'}},
        {"method": "GET", "path": entry, "headers": {"If-Match": f'"{uuid.uuid4()}"'}},
        {"method": "PUT", "path": f"/v2/app/{uuid.uuid4()}/object/{existing}", "body": 1},
        {"method": "PUT", "path": f"/v2/app/{w.app}/object/not-a-uuid", "body": 1},  # 410
        {"method": "DELETE", "path": f"/v2/app/{uuids.App.Registration}/object/{existing}"},
        {"method": "POST", "path": "/v2/principal", "body": {"name": "bad name!"}},  # 422
        {"method": "POST", "path": "/v2/object", "body": {"class": w.obj}},  # 409
        {"method": "PUT", "path": entry, "body": 2, "headers": {"If-Match": f'"{stale}"'}},
    ]


def _single(api: Api, op: dict[str, Any]) -> dict[str, Any]:
    """What the single request answers, as a batch result."""
    headers = dict(op.get("headers", {}))
    kwargs: dict[str, Any] = {}
    if "body" in op:
        kwargs["json"] = op["body"]
        if op["method"] == "PATCH":
            headers["Content-Type"] = "application/merge-patch+json"
    r = api.request(op["method"], op["path"], headers=headers, **kwargs)
    out: dict[str, Any] = {"status": r.status_code}
    if "ETag" in r.headers:
        out["etag"] = r.headers["ETag"]
    out["body"] = r.json() if r.content else None
    return out


def _shape(result: dict[str, Any], names: dict[str, str], etags: dict[str, str]) -> Any:
    """A result with this run's uuids named, other uuids and ETags numbered in order of
    first appearance (so two runs compare equal when they answer alike)."""
    text = repr(result)
    for value, name in names.items():
        text = text.replace(value, name)
    return _UUID.sub(lambda m: etags.setdefault(m[0], f"<uuid{len(etags)}>"), text)


@pytest.fixture
def admin(config_store: ConfigStoreProcess) -> Api:
    return Api(config_store.url, ("admin", ADMIN_PASSWORD))


def test_each_operation_answers_as_the_single_request(admin: Api) -> None:
    alone, batched = _world(admin), _world(admin)
    expected = [_single(admin, op) for op in _operations(alone)]
    assert [e["status"] for e in expected] == [201, 200, 200, 200, 201, 204, 204, 200, 200,
                                               204, 200, 204, 204, 201, 200, 204, 200, 201,
                                               200, 200, 204, 204, 204, 404, 204]
    r = admin.post("/v2/batch", json={"operations": _operations(batched)})
    assert r.status_code == 200, r.text
    got = r.json()["results"]
    alone_ids: dict[str, str] = {}
    batched_ids: dict[str, str] = {}
    assert [_shape(g, batched.names(), batched_ids) for g in got] == \
        [_shape(e, alone.names(), alone_ids) for e in expected]
    assert admin.get(f"/v2/object/{batched.obj}").status_code == 404  # the last op ran


def test_each_refusal_answers_as_the_single_request_and_writes_nothing(admin: Api) -> None:
    w = _world(admin)
    existing = make_object(admin, uuids.Class.Device)
    stale = admin.put(f"/v2/app/{w.app}/object/{existing}", json={"v": -1})
    put = admin.put(f"/v2/app/{w.app}/object/{existing}", json={"v": 0})
    etag = put.headers["ETag"].strip('"')
    for op in _refusals(w, existing, stale.headers["ETag"].strip('"')):
        expected = _single(admin, op)
        assert expected["status"] >= 400, op
        write = {"method": "PUT", "path": f"/v2/app/{w.app}/object/{existing}", "body": "x"}
        r = admin.post("/v2/batch", json={"operations": [write, op]})
        assert r.status_code == expected["status"], (op, r.text)
        body = r.json()
        assert body["failed"] == 1 and body["results"][1] == expected, op
        assert body["results"][0]["status"] == 204
        assert str(expected["status"]) in body["error"]
        got = admin.get(f"/v2/app/{w.app}/object/{existing}")
        assert (got.json(), got.headers["ETag"].strip('"')) == ({"v": 0}, etag), op
