"""``POST /v2/batch``: each operation answers as its single request does (status, ETag,
body, ACL, ETag preconditions), the batch is one transaction (a failing operation leaves
nothing of the batch written), and the client's ``batch`` raises the single call's error
with the failing operation's ``index``. On both storage backends (``config_store``)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

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
