"""notify/v2 WATCHes of the Auth routes against a real Config Store: each update is what
the route answers the session's principal, re-checked on every grant, principal or
identity change.

Expected shapes from upstream acs-auth lib/notify.js (``v2/principal/``,
``v2/identity/:kind/``, ``v2/acl/:principal``, ``v2/acl/kerberos/:upn``; an ACL refusal is
``{status: 403}``, an empty identity list 404, an unknown Kerberos name ``[]``).
"""

from __future__ import annotations

import uuid as uuidlib

from fplus.config_store import uuids
from harness.servers import Api
from tests.conftest import grant, make_user

from .notify_helpers import RawNotify

A = uuids.AuthPerm
READ_APP = uuids.ConfigDBPerm.ReadApp


def _upn() -> str:
    return f"edge-{uuidlib.uuid4().hex[:8]}@EXAMPLE.ORG"


def _ok(body: object, status: int = 200) -> dict:
    return {"status": status, "response": {"status": 200, "body": body}}


def test_acl_watch_follows_grants_added_and_removed(admin: Api) -> None:
    user, _ = make_user(admin)
    target = str(uuidlib.uuid4())
    with RawNotify.login(admin) as ws:
        sub = ws.watch(f"v2/acl/{user}")
        assert ws.next(sub) == {**_ok([], 201), "uuid": sub}
        added = grant(admin, user, READ_APP, target)
        assert ws.next(sub) == {**_ok([{"permission": READ_APP, "target": target}]),
                                "uuid": sub}
        assert admin.delete(f"/v2/grant/{added}").status_code == 204
        assert ws.next(sub) == {**_ok([]), "uuid": sub}
        ws.assert_quiet(sub)


def test_acl_watch_is_checked_per_update(admin: Api) -> None:
    """A watcher without ReadACL hears 403; once granted ReadACL, the ACL itself."""
    watcher, as_watcher = make_user(admin)
    watched, _ = make_user(admin)
    target = str(uuidlib.uuid4())
    grant(admin, watched, READ_APP, target)
    with RawNotify.login(as_watcher) as ws:
        sub = ws.watch(f"v2/acl/{watched}")
        assert ws.next(sub)["response"] == {"status": 403}
        grant(admin, watcher, A.ReadACL, READ_APP)
        assert ws.next(sub)["response"] == {
            "status": 200, "body": [{"permission": READ_APP, "target": target}]}


def test_acl_watch_of_a_non_principal_is_404(admin: Api) -> None:
    with RawNotify.login(admin) as ws:
        sub = ws.watch(f"v2/acl/{uuidlib.uuid4()}")
        assert ws.next(sub) == {"status": 201, "response": {"status": 404}, "uuid": sub}


def test_principal_list_watch_sees_new_principals_and_needs_readkerberos(admin: Api) -> None:
    _, stranger = make_user(admin)
    with RawNotify.login(admin) as ws, RawNotify.login(stranger) as refused:
        sub = ws.watch("v2/principal/")
        first = ws.next(sub)
        assert first["status"] == 201 and first["response"]["status"] == 200
        created, _ = make_user(admin)
        assert created not in first["response"]["body"]
        assert created in ws.next(sub)["response"]["body"]
        other = refused.watch("v2/principal/")
        assert refused.next(other)["response"] == {"status": 403}


def test_identity_kind_watch_follows_put_and_delete(admin: Api) -> None:
    user, _ = make_user(admin)
    upn = _upn()
    with RawNotify.login(admin) as ws:
        sub = ws.watch("v2/identity/kerberos/")
        first = ws.next(sub)["response"]
        assert upn not in first.get("body", [])
        assert admin.put(f"/v2/principal/{user}/kerberos", json=upn).status_code == 204
        assert upn in ws.next(sub)["response"]["body"]
        assert admin.delete(f"/v2/principal/{user}/kerberos").status_code == 204
        assert upn not in ws.next(sub)["response"].get("body", [])


def test_acl_by_kerberos_name_watch_resolves_when_the_name_appears(admin: Api) -> None:
    user, _ = make_user(admin)
    target = str(uuidlib.uuid4())
    grant(admin, user, READ_APP, target)
    upn = _upn()
    with RawNotify.login(admin) as ws:
        sub = ws.watch(f"v2/acl/kerberos/{upn}")
        assert ws.next(sub) == {**_ok([], 201), "uuid": sub}
        assert admin.put(f"/v2/principal/{user}/kerberos", json=upn).status_code == 204
        assert ws.next(sub)["response"]["body"] == [{"permission": READ_APP, "target": target}]


def test_unknown_auth_watch_is_404(admin: Api) -> None:
    with RawNotify.login(admin) as ws:
        for url in ("v2/identity/", "v2/principal/x/", "v2/grant/"):
            sub = ws.watch(url)
            assert ws.next(sub) == {"status": 404, "uuid": sub}
