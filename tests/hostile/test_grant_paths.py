"""Escalation through ``PUT /v2/grant`` and ``POST /load``, against a real Config Store.

Not reached by the probe, and held: ``PUT /v2/grant/:g`` needs WriteACL on the old and the
new permission and the grant rule for the replacement (so a principal cannot widen, retarget
or take over a grant beyond what it holds); an Auth dump needs for each grant what ``POST
/v2/grant`` needs and for each identity WriteKerberos on its principal; a ConfigDB dump needs
every object-model permission as explicit wildcard grants (it can write memberships, so join
groups). Every refusal is 403 and writes nothing: the ACL is compared before and after.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.conftest import grant, make_class, make_object, make_user

P, AUTH = uuids.ConfigDBPerm, uuids.AuthPerm


@pytest.fixture(scope="module")
def admin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    store = ConfigStoreProcess(Path(tmp_path_factory.mktemp("grants")) / "cs").start()
    try:
        yield Api(store.url, ("admin", ADMIN_PASSWORD))
    finally:
        store.stop()


@dataclass
class Delegate:
    """A principal with WriteACL on ReadApp and ReadApp on one app only (grant ``mine``)."""

    uuid: str
    api: Api
    app: str
    mine: str


def delegate(admin: Api) -> Delegate:
    principal, api = make_user(admin)
    app = make_object(admin, uuids.Class.App)
    grant(admin, principal, AUTH.WriteACL, P.ReadApp)
    return Delegate(principal, api, app, grant(admin, principal, P.ReadApp, app))


def acl(admin: Api, principal: str) -> list:
    r = admin.get(f"/v2/acl/{principal}")
    assert r.status_code == 200, r.text
    return sorted(r.json(), key=str)


def test_put_grant_cannot_widen_retarget_or_take_over(admin: Api) -> None:
    me = delegate(admin)
    other, _ = make_user(admin)
    elsewhere = make_object(admin, uuids.Class.App)
    theirs = grant(admin, other, P.ReadApp, elsewhere)
    before = acl(admin, me.uuid), acl(admin, other)
    base = {"principal": me.uuid, "permission": P.ReadApp, "plural": False}
    attempts = [
        (me.mine, base | {"target": uuids.NULL}),  # my grant, widened to the wildcard
        (me.mine, base | {"target": elsewhere}),  # my grant, moved to an app I cannot read
        (me.mine, base | {"permission": P.WriteApp, "target": me.app}),  # another permission
        (me.mine, base | {"permission": AUTH.WriteACL, "target": uuids.NULL}),
        (theirs, base | {"target": elsewhere}),  # someone else's grant, made mine
    ]
    for target_grant, body in attempts:
        r = me.api.put(f"/v2/grant/{target_grant}", json=body)
        assert r.status_code == 403, (body, r.text)
    assert (acl(admin, me.uuid), acl(admin, other)) == before
    # What it holds it may still give (the rule refuses escalation, not delegation).
    r = me.api.put(f"/v2/grant/{theirs}", json=base | {"principal": other, "target": me.app})
    assert r.status_code == 204, r.text


def test_an_auth_dump_grants_nothing_beyond_the_loaders_rights(admin: Api) -> None:
    me = delegate(admin)
    victim, _ = make_user(admin)
    before = acl(admin, me.uuid)
    dump = {"service": uuids.Service.Auth, "version": 2}
    refused = [
        {"grants": {me.uuid: {P.ReadApp: None}}},  # the wildcard
        {"grants": {me.uuid: {P.ReadApp: {uuids.Class.App: True}}}},  # plural on the class
        {"grants": {me.uuid: {AUTH.WriteACL: None}}},  # more WriteACL
        {"grants": {me.uuid: {AUTH.Grant: None}}},
        {"grants": {me.uuid: {P.WriteApp: {me.app: False}}}},
        {"grants": {me.uuid: {P.ReadApp: {me.app: False, uuids.NULL: False}}}},  # one bad
        {"identities": {victim: {"kerberos": "victim@EXAMPLE.ORG"}}},
    ]
    for body in refused:
        r = me.api.post("/load", json=dump | body)
        assert r.status_code == 403, (body, r.text)
    assert acl(admin, me.uuid) == before
    r = admin.get(f"/v2/principal/{victim}/kerberos")
    assert r.status_code == 404


def test_a_configdb_dump_needs_wildcard_object_model_grants(admin: Api) -> None:
    principal, api = make_user(admin)
    group = make_class(admin)
    r = admin.put(f"/v2/class/{uuids.Class.Principal}/direct/subclass/{group}")
    assert r.status_code == 204, r.text
    grant(admin, group, AUTH.WriteACL, uuids.NULL)  # a group worth joining
    # It may write memberships of itself and the members of the group: not enough.
    grant(admin, principal, P.WriteMemberships, uuids.Special.Self)
    grant(admin, principal, P.WriteMembers, group)
    grant(admin, principal, P.WriteApp, uuids.NULL)
    before = acl(admin, principal)
    dump = {"service": uuids.Service.ConfigDB, "version": 2,
            "objects": {uuids.Class.Principal: {principal: {"memberOf": [group]}}}}
    r = api.post("/load", json=dump)
    assert r.status_code == 403, r.text
    assert r.json()["error"] == "loading dumps needs wildcard object-model grants"
    assert acl(admin, principal) == before
    assert principal not in admin.get(f"/v2/class/{group}/direct/member").json()
    r = api.post("/v1/load", json={"service": uuids.Service.ConfigDB, "version": 1})
    assert r.status_code == 403, r.text
