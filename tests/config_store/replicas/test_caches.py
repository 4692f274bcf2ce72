"""What each replica keeps in memory follows writes through the other: grants, class
memberships (the ACL and class listings) and ConfigSchema validators."""

from __future__ import annotations

import uuid

from fplus.config_store import uuids
from harness.servers import Api
from tests.config_store.actors import add_member
from tests.config_store.test_password_rotation import principal
from tests.conftest import grant, make_class, make_object

from .pair import Replicas, eventually, known_to

READ_APP = uuids.ConfigDBPerm.ReadApp
SCHEMA = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}


def user(pair: Replicas) -> tuple[str, Api]:
    """A principal made through A with a generated password, and its session on B."""
    uid, name, password = principal(pair.admin(0))
    return uid, Api(pair.b.url, (name, password))


def entry(pair: Replicas) -> tuple[str, str]:
    """An app and an object with an entry, made through A and known to B."""
    a = pair.admin(0)
    app, obj = make_object(a, uuids.Class.App), make_object(a, uuids.Class.Device)
    assert a.put(f"/v2/app/{app}/object/{obj}", json={"n": 1}).status_code == 201
    known_to(pair.admin(1), app, obj)
    return app, obj


def reads(api: Api, app: str, obj: str) -> int:
    r = api.get(f"/v2/app/{app}/object/{obj}")
    assert r.status_code in (200, 403), r.text
    return r.status_code


def test_a_grant_added_and_removed_through_a_takes_effect_on_b(pair: Replicas) -> None:
    (uid, on_b), (app, obj) = user(pair), entry(pair)
    assert reads(on_b, app, obj) == 403
    granted = grant(pair.admin(0), uid, READ_APP, app)
    eventually(lambda: reads(on_b, app, obj) == 200, "the grant honoured on B")
    assert pair.admin(0).delete(f"/v2/grant/{granted}").status_code == 204
    eventually(lambda: reads(on_b, app, obj) == 403, "the removed grant refused on B")


def test_class_membership_through_a_reaches_bs_acl_and_listings(pair: Replicas) -> None:
    (uid, on_b), (app, obj) = user(pair), entry(pair)
    a, b = pair.admin(0), pair.admin(1)
    group = make_class(a)
    grant(a, group, READ_APP, app)
    known_to(b, group)

    def listed() -> bool:
        r = b.get(f"/v2/class/{group}/member")
        assert r.status_code == 200, r.text
        return uid in r.json()

    add_member(a, group, uid)
    eventually(listed, "the new member listed on B")
    eventually(lambda: reads(on_b, app, obj) == 200, "the member's grant honoured on B")
    assert a.delete(f"/v2/class/{group}/direct/member/{uid}").status_code == 204
    eventually(lambda: not listed(), "the removed member unlisted on B")
    eventually(lambda: reads(on_b, app, obj) == 403, "the ex-member refused on B")


def test_a_config_schema_set_and_removed_through_a_is_enforced_on_b(pair: Replicas) -> None:
    app, obj = entry(pair)
    a, b = pair.admin(0), pair.admin(1)
    url = f"/v2/app/{app}/object/{obj}"
    assert b.put(url, json={"n": 2}).status_code == 204  # B has looked the schema up: none
    assert a.put(f"/v2/app/{uuids.App.ConfigSchema}/object/{app}", json=SCHEMA).status_code == 201
    eventually(lambda: b.put(url, json={"n": "two"}).status_code == 422,
               "the new schema enforced on B")
    assert a.delete(f"/v2/app/{uuids.App.ConfigSchema}/object/{app}").status_code == 204
    eventually(lambda: b.put(url, json={"n": "two"}).status_code == 204,
               "the removed schema no longer enforced on B")


def bulk_write(api: Api, grants: int = 200) -> None:
    """One write of many changes: a principal with ``grants`` grants."""
    body = {"name": f"bulk-{uuid.uuid4().hex[:10]}",
            "grants": [{"permission": READ_APP, "target": str(uuid.uuid4())}
                       for _ in range(grants)]}
    r = api.post("/v2/principal", json=body)
    assert r.status_code == 201, r.text


def test_a_schema_committed_through_a_holds_at_once_for_writes_through_b(pair: Replicas) -> None:
    """Same semantics as one store: once A has answered a schema PUT, no write through B may
    store an entry that breaks it (writes are serialised, so B must check the schema the
    database holds, not the one it remembers)."""
    a, b = pair.admin(0), pair.admin(1)
    stored_breaking = []
    for _ in range(5):
        app, obj = entry(pair)
        url = f"/v2/app/{app}/object/{obj}"
        assert b.put(url, json={"n": 2}).status_code == 204  # B looks the schema up: none
        bulk_write(a)  # B has plenty to read before it reaches the schema
        r = a.put(f"/v2/app/{uuids.App.ConfigSchema}/object/{app}", json=SCHEMA)
        assert r.status_code == 201, r.text
        r = b.put(url, json={"n": "two"})
        assert r.status_code in (204, 422), r.text
        if r.status_code == 204:
            stored_breaking.append(b.get(url).json())
    assert not stored_breaking, f"B stored entries breaking the app's schema: {stored_breaking}"
