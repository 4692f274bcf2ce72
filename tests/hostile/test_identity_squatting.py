"""Identity squatting, against a real Config Store: claiming another principal's name.

Not reached by the probe. A principal allowed to set its own Kerberos name (WriteKerberos on
itself) could set ``victim@REALM``, ``victim`` being another principal's login name: every
lookup of that name (``GET /v2/identity/kerberos/…``, ``GET /v2/acl/kerberos/…``) then found
the squatter, since a stored name came before the login-name fallback. It could also
pre-register ``newcomer@REALM`` before ``newcomer`` existed, and one holding WriteKerberos
on the wildcard could set a name on a uuid that was not a principal yet (creating the
principal with that uuid later inherited it). Fixed: such a name belongs to the login's
principal (409 elsewhere, and lookups find that principal), and identities are set only on
principals that exist (404). Setting another principal's name without WriteKerberos on it
was already refused (403), through the route and through an Auth dump.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.conftest import grant, make_user

REALM = "EXAMPLE.ORG"


@pytest.fixture(scope="module")
def admin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    store = ConfigStoreProcess(Path(tmp_path_factory.mktemp("squat")) / "cs").start()
    try:
        yield Api(store.url, ("admin", ADMIN_PASSWORD))
    finally:
        store.stop()


def squatter(admin: Api) -> tuple[str, Api]:
    """A principal that may set its own Kerberos name."""
    principal, user = make_user(admin)
    grant(admin, principal, uuids.AuthPerm.WriteKerberos, uuids.Special.Self)
    return principal, user


def holder(admin: Api, upn: str) -> str | None:
    r = admin.get(f"/v2/identity/kerberos/{upn}")
    return r.json() if r.status_code == 200 else None


def set_name(api: Api, principal: str, upn: str) -> int:
    return api.put(f"/v2/principal/{principal}/kerberos", json=upn).status_code


def test_another_principals_login_name_cannot_be_claimed(admin: Api) -> None:
    me, user = squatter(admin)
    victim = f"victim-{uuidlib.uuid4().hex[:8]}"
    victim_uuid, _ = make_user(admin, victim)
    assert holder(admin, f"{victim}@{REALM}") == victim_uuid
    r = user.put(f"/v2/principal/{me}/kerberos", json=f"{victim}@{REALM}")
    assert r.status_code == 409, r.text
    assert "belongs to the principal whose login name it starts with" in r.json()["error"]
    assert set_name(user, me, f"{victim.upper()}@{REALM}") == 409  # names are unique ignoring case
    assert holder(admin, f"{victim}@{REALM}") == victim_uuid
    assert admin.get(f"/v2/principal/{me}/kerberos").status_code == 404  # nothing written
    # Nor through an Auth dump, nor for the victim itself (no WriteKerberos on it).
    dump = {"service": uuids.Service.Auth, "version": 2}
    r = user.post("/load", json=dump | {"identities": {me: {"kerberos": f"{victim}@{REALM}"}}})
    assert r.status_code == 409, r.text
    r = user.post("/load", json=dump | {"identities": {victim_uuid: {"kerberos": f"x@{REALM}"}}})
    assert r.status_code == 403, r.text
    assert set_name(user, victim_uuid, f"{victim}@{REALM}") == 403
    # Its own name stays its own to set.
    assert user.auth is not None
    assert set_name(user, me, f"{user.auth[0]}@{REALM}") == 204


def test_a_name_pre_registered_for_a_newcomer_neither_blocks_nor_takes_it(admin: Api) -> None:
    me, user = squatter(admin)
    newcomer = f"newcomer-{uuidlib.uuid4().hex[:8]}"
    assert set_name(user, me, f"{newcomer}@{REALM}") == 204  # nobody's yet
    created, _ = make_user(admin, newcomer)  # not blocked
    assert holder(admin, f"{newcomer}@{REALM}") == created
    acl = admin.get(f"/v2/acl/kerberos/{newcomer}@{REALM}").json()
    grant(admin, created, uuids.ConfigDBPerm.ReadApp, uuids.App.Info)
    assert admin.get(f"/v2/acl/kerberos/{newcomer}@{REALM}").json() != acl  # the newcomer's


def test_no_identity_for_a_principal_that_does_not_exist_yet(admin: Api) -> None:
    principal, user = make_user(admin)
    grant(admin, principal, uuids.AuthPerm.WriteKerberos, uuids.NULL)
    future = str(uuidlib.uuid4())
    r = user.put(f"/v2/principal/{future}/kerberos", json=f"ghost@{REALM}")
    assert r.status_code == 404, r.text
    dump = {"service": uuids.Service.Auth, "version": 2,
            "identities": {future: {"kerberos": f"ghost@{REALM}"}}}
    assert user.post("/load", json=dump).status_code == 404
    assert holder(admin, f"ghost@{REALM}") is None
