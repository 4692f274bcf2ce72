"""``POST /v2/batch``: each operation answers as its single request does (status, ETag,
body, ACL, ETag preconditions), the batch is one transaction (a failing operation leaves
nothing of the batch written), and the client's ``batch`` raises the single call's error
with the failing operation's ``index``. On both storage backends (``config_store``)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

import fplus.spec
from fplus.config_store import uuids
from fplus.config_store.client import (
    ConfigStoreClient,
    Forbidden,
    NotFound,
    PreconditionFailed,
    batch,
)
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.conftest import grant, make_object, make_user
from tests.openapi_doc import inline

P = uuids.ConfigDBPerm


def _admin(store: ConfigStoreProcess) -> Api:
    return Api(store.url, ("admin", ADMIN_PASSWORD))


def _entry(app: str, obj: str) -> str:
    return f"/v2/app/{app}/object/{obj}"


def _post(api: Api, ops: list[dict[str, Any]]) -> Any:
    return api.post("/v2/batch", json={"operations": ops})


@pytest.fixture
def app_and_objects(config_store: ConfigStoreProcess) -> tuple[str, list[str]]:
    admin = _admin(config_store)
    app = make_object(admin, uuids.Class.App)
    return app, [make_object(admin, uuids.Class.Device) for _ in range(4)]


def test_client_batch_writes_all_and_answers_each(
        config_store: ConfigStoreProcess, app_and_objects: tuple[str, list[str]]) -> None:
    app, objs = app_and_objects
    cs = ConfigStoreClient(config_store.url, "admin", ADMIN_PASSWORD)
    fresh = str(uuid.uuid4())
    results = cs.batch([
        batch.create_object(uuids.Class.Device, fresh),
        batch.put_config(app, fresh, {"n": 1}, if_none_match="*"),
        batch.patch_config(app, fresh, {"m": 2}),
        batch.get_config(app, fresh),
        batch.put_config(app, objs[0], {"n": 0}),
        batch.delete_config(app, objs[1]),
    ])
    assert [r.status for r in results] == [201, 201, 204, 200, 201, 404]
    assert results[0].body["uuid"] == fresh
    assert results[3].body == {"n": 1, "m": 2}
    assert results[3].etag == results[2].etag == cs.get_config_with_etag(app, fresh)[1]
    assert cs.get_config(app, fresh) == {"n": 1, "m": 2}
    assert cs.get_config(app, objs[0]) == {"n": 0}


def test_a_failing_operation_writes_nothing_and_raises_with_its_index(
        config_store: ConfigStoreProcess, app_and_objects: tuple[str, list[str]]) -> None:
    app, objs = app_and_objects
    cs = ConfigStoreClient(config_store.url, "admin", ADMIN_PASSWORD)
    etag = cs.put_config(app, objs[0], {"v": "old"})
    ops = [batch.put_config(app, objs[1], {"v": 1}),
           batch.put_config(app, objs[2], {"v": 2}),
           batch.put_config(app, objs[0], {"v": "new"}, if_match=str(uuid.uuid4())),
           batch.put_config(app, objs[3], {"v": 3})]
    with pytest.raises(PreconditionFailed) as failed:
        cs.batch(ops)
    assert failed.value.index == 2
    assert cs.get_config_with_etag(app, objs[0]) == ({"v": "old"}, etag)
    assert [cs.get_config(app, o) for o in objs[1:]] == [None, None, None]


def test_not_found_and_forbidden_are_the_single_calls_errors(
        config_store: ConfigStoreProcess, app_and_objects: tuple[str, list[str]]) -> None:
    app, objs = app_and_objects
    admin = _admin(config_store)
    cs = ConfigStoreClient(config_store.url, "admin", ADMIN_PASSWORD)
    with pytest.raises(NotFound) as missing:
        cs.batch([batch.put_config(app, objs[0], {"a": 1}),
                  batch.get_config(app, objs[1], absent_ok=False)])
    assert missing.value.index == 1 and cs.get_config(app, objs[0]) is None

    name, password = f"batcher-{uuid.uuid4().hex[:8]}", "pw-" + "y" * 8
    principal, _ = make_user(admin, name, password)
    grant(admin, principal, P.WriteApp, app, obj=objs[0])
    limited = ConfigStoreClient(config_store.url, name, password)
    with pytest.raises(Forbidden) as refused:
        limited.batch([batch.put_config(app, objs[0], {"mine": 1}),
                       batch.put_config(app, objs[1], {"not mine": 1})])
    assert refused.value.index == 1
    assert cs.get_config(app, objs[0]) is None and cs.get_config(app, objs[1]) is None
    assert [r.status for r in limited.batch([batch.put_config(app, objs[0], {"mine": 1})])] \
        == [201]


def _audit(admin: Api, **query: str) -> list[dict[str, Any]]:
    r = admin.get("/v2/audit", params={"limit": "1000", **query})
    assert r.status_code == 200, r.text
    return r.json()["entries"]


def test_audit_rows_are_written_in_the_batchs_transaction(
        config_store: ConfigStoreProcess, app_and_objects: tuple[str, list[str]]) -> None:
    app, _ = app_and_objects
    admin = _admin(config_store)
    kept, dropped = (f"audited-{uuid.uuid4().hex[:8]}" for _ in range(2))
    rid = {"X-Request-Id": f"batch-{uuid.uuid4().hex}"}
    r = admin.post("/v2/batch", headers=rid, json={"operations": [
        {"method": "POST", "path": "/v2/principal", "body": {"name": kept}},
        {"method": "POST", "path": "/v2/principal", "body": {"name": dropped}},
        {"method": "GET", "path": f"/v2/app/{app}/object/{uuid.uuid4()}"}]})
    assert r.status_code == 404 and r.json()["failed"] == 2, r.text
    assert [e for e in _audit(admin) if e["requestId"] == rid["X-Request-Id"]] == []
    assert admin.get(f"/v2/identity/login/{kept}").status_code == 404

    r = admin.post("/v2/batch", headers=rid, json={"operations": [
        {"method": "POST", "path": "/v2/principal", "body": {"name": kept}}]})
    assert r.status_code == 200, r.text
    uuid_ = r.json()["results"][0]["body"]["uuid"]
    rows = [e for e in _audit(admin) if e["requestId"] == rid["X-Request-Id"]]
    assert [(e["action"], e["outcome"], e["target"]["uuid"]) for e in rows] == \
        [("principal.create", "ok", uuid_)]


def test_a_refused_auth_operation_is_audited_once_and_nothing_else_written(
        config_store: ConfigStoreProcess, app_and_objects: tuple[str, list[str]]) -> None:
    app, objs = app_and_objects
    admin = _admin(config_store)
    name, password = f"refused-{uuid.uuid4().hex[:8]}", "pw-" + "z" * 8
    principal, user = make_user(admin, name, password)
    grant(admin, principal, P.WriteApp, app, obj=objs[0])
    victim, _ = make_user(admin)
    r = _post(user, [{"method": "PUT", "path": _entry(app, objs[0]), "body": {"u": 1}},
                     {"method": "DELETE", "path": f"/v2/principal/{victim}"}])
    assert r.status_code == 403 and r.json()["failed"] == 1, r.text
    assert admin.get(_entry(app, objs[0])).status_code == 404
    assert admin.get(f"/v2/principal/{victim}").status_code == 200
    rows = _audit(admin, principal=principal)
    assert [(e["action"], e["outcome"], e["status"], e["target"]["uuid"]) for e in rows] == \
        [("principal.delete", "refused", 403, victim)]


@pytest.mark.parametrize(("body", "status", "named"), [
    (b"{not json", 400, "not valid JSON"),
    (b'{"operations": {}}', 400, "operations must be a list"),
    (b'{"operations": [], "atomic": true}', 400, "'atomic'"),
    (b'{"operations": [7]}', 400, "operations[0] must be an object"),
    (b'{"operations": [{"method": "HEAD", "path": "/v2/object"}]}', 400, "operations[0].method"),
    (b'{"operations": [{"method": "GET", "path": "/ping"}]}', 400, "operations[0].path"),
    (b'{"operations": [{"method": "POST", "path": "/v2/batch"}]}', 400, "cannot be batched"),
    (b'{"operations": [{"method": "GET", "path": "/v2/dump"}]}', 400, "cannot be batched"),
    (b'{"operations": [{"method": "GET", "path": "/v2/nowhere"}]}', 400,
     "not a ConfigDB or Auth route"),
    (b'{"operations": [{"method": "GET", "path": "/v2/object", "headers": {"X-A": "1"}}]}',
     400, "'X-A' is not allowed"),
    (b'{"operations": [{"method": "GET", "path": "/v2/object", "accept": ["404"]}]}', 400,
     "operations[0].accept"),
    (b'{"operations": [{"method": "GET", "path": "/v2/object", "verb": 1}]}', 400, "'verb'"),
])
def test_bad_input_is_refused_naming_it_and_runs_nothing(
        config_store: ConfigStoreProcess, app_and_objects: tuple[str, list[str]],
        body: bytes, status: int, named: str) -> None:
    app, objs = app_and_objects
    admin = _admin(config_store)
    write = json.dumps({"method": "PUT", "path": _entry(app, objs[0]), "body": 1}).encode()
    if body.startswith(b'{"operations": []'):  # a good write in it: it must not run
        body = body.replace(b"[]", b"[" + write + b"]", 1)
    elif body.startswith(b'{"operations": ['):  # a good write first: it must not run
        body = body.replace(b"[", b"[" + write + b", ", 1)
        named = named.replace("operations[0]", "operations[1]")
    r = admin.post("/v2/batch", data=body, headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    assert named in r.json()["error"]
    assert admin.get(_entry(app, objs[0])).status_code == 404


def test_more_operations_than_the_limit_are_refused(
        config_store: ConfigStoreProcess, app_and_objects: tuple[str, list[str]]) -> None:
    app, objs = app_and_objects
    admin = _admin(config_store)
    ops = [{"method": "PUT", "path": _entry(app, objs[0]), "body": i} for i in range(101)]
    r = _post(admin, ops)
    assert r.status_code == 413, r.text
    assert "at most 100" in r.json()["error"]
    assert "--batch-max-operations" in r.json()["error"]
    assert admin.get(_entry(app, objs[0])).status_code == 404
    assert _post(admin, ops[:100]).status_code == 200
    assert admin.get(_entry(app, objs[0])).json() == 99


def test_answers_conform_to_the_openapi_document(
        config_store: ConfigStoreProcess, app_and_objects: tuple[str, list[str]]) -> None:
    spec = yaml.safe_load((Path(fplus.spec.__file__).parent / "config-store.yaml").read_text())
    responses = inline(spec, spec["paths"]["/v2/batch"]["post"]["responses"])
    request_schema = inline(spec, spec["components"]["schemas"]["BatchRequest"])
    app, objs = app_and_objects
    admin = _admin(config_store)
    write = {"method": "PUT", "path": _entry(app, objs[0]), "body": {"a": 1},
             "headers": {"If-None-Match": "*"}}
    sent = [([write, {"method": "GET", "path": _entry(app, objs[0])}], 200),
            ([write], 412),
            ([{"method": "GET", "path": _entry(app, objs[1]), "accept": [404]},
              {"method": "POST", "path": "/v2/principal", "body": {"name": "no good!"}}], 422),
            ([{"method": "GET", "path": "/v2/nowhere"}], 400)]
    for ops, status in sent:
        assert not list(Draft202012Validator(request_schema).iter_errors({"operations": ops}))
        r = _post(admin, ops)
        assert r.status_code == status, r.text
        schema = responses.get(str(status), responses["default"])["content"]["application/json"]
        errors = [e.message for e in Draft202012Validator(schema["schema"]).iter_errors(r.json())]
        assert errors == [], (status, r.json())


def test_an_entry_is_checked_against_the_schema_written_before_it(
        config_store: ConfigStoreProcess, app_and_objects: tuple[str, list[str]]) -> None:
    app, objs = app_and_objects
    admin = _admin(config_store)
    schema = {"method": "PUT", "path": _entry(uuids.App.ConfigSchema, app),
              "body": {"type": "object", "required": ["name"]}}
    r = _post(admin, [schema, {"method": "PUT", "path": _entry(app, objs[0]), "body": {}}])
    assert r.status_code == 422 and r.json()["failed"] == 1, r.text
    assert "name" in r.json()["results"][1]["body"]["errors"][0]
    assert admin.get(_entry(uuids.App.ConfigSchema, app)).status_code == 404
    assert admin.put(_entry(app, objs[0]), json={}).status_code == 201  # no schema kept

    r = _post(admin, [{"method": "DELETE", "path": _entry(app, objs[0])}, schema,
                      {"method": "PUT", "path": _entry(app, objs[1]), "body": {"name": "x"}}])
    assert [res["status"] for res in r.json()["results"]] == [204, 201, 201], r.text
    assert admin.put(_entry(app, objs[2]), json={}).status_code == 422  # as committed


def test_a_rolled_back_batch_leaves_no_object_membership_or_grant_in_memory(
        config_store: ConfigStoreProcess, app_and_objects: tuple[str, list[str]]) -> None:
    app, objs = app_and_objects
    admin = _admin(config_store)
    klass, fresh = make_object(admin, uuids.Class.R1Class), str(uuid.uuid4())
    principal, _ = make_user(admin)
    r = _post(admin, [
        {"method": "POST", "path": "/v2/object", "body": {"class": uuids.Class.Device,
                                                           "uuid": fresh}},
        {"method": "PUT", "path": f"/v2/class/{klass}/direct/member/{objs[0]}"},
        {"method": "POST", "path": "/v2/grant",
         "body": {"principal": principal, "permission": P.ReadApp, "target": app}},
        {"method": "GET", "path": f"/v2/acl/{principal}"},
        {"method": "GET", "path": _entry(app, fresh)}])
    assert r.status_code == 404 and r.json()["failed"] == 4, r.text
    assert r.json()["results"][3]["body"] == [{"permission": P.ReadApp, "target": app}]
    assert admin.get(f"/v2/object/{fresh}").status_code == 404
    assert admin.get(f"/v2/class/{klass}/direct/member").json() == []
    assert admin.get(f"/v2/acl/{principal}").json() == []


def test_the_request_body_limit_applies_to_the_whole_batch(
        config_store: ConfigStoreProcess, app_and_objects: tuple[str, list[str]]) -> None:
    app, objs = app_and_objects
    admin = _admin(config_store)
    pad = "x" * (300 * 1024)  # each operation is under the limit, the four of them over it
    r = _post(admin, [{"method": "PUT", "path": _entry(app, o), "body": pad} for o in objs])
    assert r.status_code == 413, r.text
    assert [admin.get(_entry(app, o)).status_code for o in objs] == [404] * 4
