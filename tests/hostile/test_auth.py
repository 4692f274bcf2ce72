"""Auth findings of the probe, against a real Config Store: revocation that did not revoke,
tokens minting tokens, privilege escalation through grants, a name oracle, half-made
principals, case-twin names, world-readable database files, and empty or corrupt databases
taken for a fresh store (or a traceback).

HTTP cases share one store (none of them harms it); cases that restart a store or break its
files get their own data dir.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess, free_port

A, P, C = uuids.AuthPerm, uuids.ConfigDBPerm, uuids.Class
DB = "config-store.db"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConfigStoreProcess]:
    server = ConfigStoreProcess(tmp_path_factory.mktemp("auth") / "data").start()
    yield server
    server.stop()


@pytest.fixture
def admin(store: ConfigStoreProcess) -> Api:
    return Api(store.url, ("admin", ADMIN_PASSWORD))


def name(prefix: str = "u") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def user(admin: Api) -> tuple[str, Api]:
    """A principal with a generated password (cheap to check): its uuid and a session."""
    who = name()
    r = admin.post("/v2/principal", json={"name": who})
    assert r.status_code == 201, r.text
    uid = r.json()["uuid"]
    password = admin.post(f"/v2/principal/{uid}/password").json()["password"]
    return uid, Api(admin.base, (who, password))


def grant(admin: Api, principal: str, permission: str, target: str, **extra: object) -> None:
    r = admin.post("/v2/grant", json={"principal": principal, "permission": permission,
                                      "target": target, **extra})
    assert r.status_code == 201, r.text


def token(api: Api) -> str:
    r = api.post("/token")
    assert r.status_code == 200, r.text
    return r.json()["token"]


def works(base: str, value: str) -> bool:
    r = Api(base).get("/v2/whoami/uuid", headers={"Authorization": f"Bearer {value}"})
    assert r.status_code in (200, 401), r.text
    return r.status_code == 200


# -- revocation ----------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["put-password", "generate-password", "delete-principal",
                                 "delete-object"])
def test_a_password_change_or_deletion_ends_tokens_at_once(admin: Api, how: str) -> None:
    uid, api = user(admin)
    issued = [token(api), token(api)]
    assert all(works(admin.base, t) for t in issued)
    r = {"put-password": lambda: admin.put(f"/v2/principal/{uid}/password", json="new-pw-1"),
         "generate-password": lambda: admin.post(f"/v2/principal/{uid}/password"),
         "delete-principal": lambda: admin.delete(f"/v2/principal/{uid}"),
         "delete-object": lambda: admin.delete(f"/v2/object/{uid}")}[how]()
    assert r.status_code in (200, 204), r.text
    assert not any(works(admin.base, t) for t in issued)


def test_rotation_grace_keeps_old_tokens_until_the_deadline_only(admin: Api) -> None:
    uid, api = user(admin)
    before = token(api)
    r = admin.post(f"/v2/principal/{uid}/password", json={"previousValidFor": 2})
    assert r.status_code == 200, r.text
    during = token(api)  # the old password is still accepted: so is what it obtains
    assert works(admin.base, before) and works(admin.base, during)
    time.sleep(2.5)
    assert not works(admin.base, before) and not works(admin.base, during)
    assert api.get("/v2/whoami/uuid").status_code == 401
    assert api.auth is not None
    fresh = Api(admin.base, (api.auth[0], r.json()["password"]))
    assert works(admin.base, token(fresh))


def test_a_token_cannot_mint_tokens(admin: Api) -> None:
    _, api = user(admin)
    value = token(api)
    for scheme in ("Bearer", "bearer"):
        r = Api(admin.base).post("/token", headers={"Authorization": f"{scheme} {value}"})
        assert r.status_code == 403, r.text
        assert "Basic" in r.json()["error"]
    assert works(admin.base, value)


# -- privilege ---------------------------------------------------------------------------
def test_writeacl_alone_cannot_grant_oneself_more(admin: Api) -> None:
    """The probe: WriteACL on WriteApp let a principal grant itself WriteApp on everything.
    Now it hands out only what it holds."""
    app = admin.post("/v2/object", json={"class": C.App}).json()["uuid"]
    uid, api = user(admin)
    for perm in (P.WriteApp, P.ReadApp):
        grant(admin, uid, A.WriteACL, perm)
    grant(admin, uid, P.ReadApp, app)
    for target in (app, uuids.App.BootstrapScript, uuids.NULL):
        r = api.post("/v2/grant", json={"principal": uid, "permission": P.WriteApp,
                                        "target": target})
        assert r.status_code == 403, r.text
    other, _ = user(admin)
    r = api.post("/v2/grant", json={"principal": other, "permission": P.ReadApp,
                                    "target": app})
    assert r.status_code == 201, r.text


# -- names -------------------------------------------------------------------------------
def test_acl_by_name_reveals_no_names(admin: Api) -> None:
    known, _ = user(admin)
    grant(admin, known, P.ReadApp, uuids.NULL)
    known_name = admin.get(f"/v2/principal/{known}/login").json()
    uid, api = user(admin)
    grant(admin, uid, A.ReadACL, uuids.NULL)  # may read every ACL entry, not resolve names
    answers = [api.get(f"/v2/acl/kerberos/{n}") for n in (known_name, name("nobody"))]
    assert [(r.status_code, r.json()) for r in answers] == [(200, []), (200, [])]
    grant(admin, uid, A.ReadKerberos, uuids.NULL)
    # an unknown name is [] even to one who may resolve names, as upstream (acs-auth
    # lib/api_v2.js get_krb_acl: "Don't return 404, we haven't checked ACLs")
    assert api.get(f"/v2/acl/kerberos/{name('nobody')}").json() == []
    assert api.get(f"/v2/acl/kerberos/{known_name}").json() == [
        {"permission": P.ReadApp, "target": uuids.NULL}]


def test_names_are_unique_regardless_of_case(admin: Api) -> None:
    lower = name("nobody")
    first = admin.post("/v2/principal", json={"name": lower})
    assert first.status_code == 201, first.text
    for twin in (lower.capitalize(), lower.upper()):
        r = admin.post("/v2/principal", json={"name": twin, "password": "pw-12345678"})
        assert r.status_code == 409, r.text
        assert lower in r.json()["error"]
        assert admin.get(f"/v2/identity/kerberos/{twin}").status_code == 404
    assert admin.post("/v2/principal", json={"name": lower}).json()["uuid"] == \
        first.json()["uuid"]


# -- atomic creation -----------------------------------------------------------------------
REFUSED_EXTRAS = {
    "group-it-may-not-join": lambda group, app: {"groups": [group]},
    "grant-it-may-not-give": lambda group, app: {
        "grants": [{"permission": P.WriteApp, "target": app}]},
    "label-it-may-not-write": lambda group, app: {"label": "Sneaky"},
}


@pytest.mark.parametrize("extra", REFUSED_EXTRAS.values(), ids=REFUSED_EXTRAS.keys())
def test_principal_creation_is_all_or_nothing(admin: Api, extra) -> None:
    """The probe: groups the caller may not join answered 403 but left the principal created
    and able to log in. The caller here may create principals, add members to the group and
    grant ReadApp, but not the one extra asked for."""
    group = admin.post("/v2/object", json={"class": C.R1Class}).json()["uuid"]
    app = admin.post("/v2/object", json={"class": C.App}).json()["uuid"]
    uid, api = user(admin)
    for perm, target in ((A.WriteKerberos, C.Principal), (P.CreateObj, C.Principal),
                         (P.WriteMembers, group), (A.WriteACL, P.WriteApp)):
        grant(admin, uid, perm, target)
    members = set(admin.get(f"/v2/class/{C.Principal}/member").json())
    objects = set(admin.get("/v2/object").json())
    new = name("half")
    r = api.post("/v2/principal", json={"name": new, "password": "pw-12345678",
                                        **extra(group, app)})
    assert r.status_code == 403, r.text
    assert admin.get(f"/v2/identity/kerberos/{new}").status_code == 404
    assert Api(admin.base, (new, "pw-12345678")).get("/v2/whoami").status_code == 401
    assert set(admin.get(f"/v2/class/{C.Principal}/member").json()) == members
    assert set(admin.get("/v2/object").json()) == objects
    assert admin.get(f"/v2/class/{group}/member").json() == []
    plain = api.post("/v2/principal", json={"name": new})  # without the extra it may do
    assert plain.status_code == 201, plain.text


# -- database files ------------------------------------------------------------------------
def modes(data: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in data.iterdir()
            if p.name.startswith(DB)}


def test_database_files_are_private(tmp_path: Path) -> None:
    server = ConfigStoreProcess(tmp_path / "data").start()
    try:
        user(Api(server.url, ("admin", ADMIN_PASSWORD)))
        found = modes(server.data_dir)
        assert {DB, f"{DB}-wal", f"{DB}-shm"} <= set(found)
        assert set(found.values()) == {0o600}, {k: oct(v) for k, v in found.items()}
        server.stop()
        for file in found:
            if (server.data_dir / file).exists():
                os.chmod(server.data_dir / file, 0o644)
        server.start()
        assert set(modes(server.data_dir).values()) == {0o600}
    finally:
        server.stop()


def test_existing_case_twins_still_start(tmp_path: Path) -> None:
    """A database from before the rule may hold ``nobody`` and ``Nobody``: it still starts,
    and each logs in by its exact name."""
    server = ConfigStoreProcess(tmp_path / "data").start()
    try:
        admin = Api(server.url, ("admin", ADMIN_PASSWORD))
        uid, api = user(admin)
        assert api.auth is not None
        server.stop()
        twin = api.auth[0].upper()
        with sqlite3.connect(server.data_dir / DB) as db:
            db.execute("INSERT INTO principal (uuid, name, password_hash) "
                       "SELECT ?, ?, password_hash FROM principal WHERE uuid = ?",
                       (str(uuid.uuid4()), twin, uid))
        db.close()
        server.start()
        assert api.get("/v2/whoami/uuid").json() == uid
        assert Api(server.url, (twin, api.auth[1])).get("/v2/whoami/uuid").status_code == 200
    finally:
        server.stop()


def serve_once(data: Path) -> subprocess.CompletedProcess[str]:
    """``config-store serve`` on ``data``, expected to exit by itself (killed if it serves)."""
    env = dict(os.environ, FPLUS_ADMIN_PASSWORD=ADMIN_PASSWORD)
    proc = subprocess.Popen(
        [sys.executable, "-m", "fplus.config_store.cli", "serve", "--data-dir", str(data),
         "--port", str(free_port())], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"config-store served an unusable database: {err}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def damaged_page(path: Path) -> None:
    """A real database with one b-tree page overwritten: the header still reads fine."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE filler (x BLOB)")
        db.executemany("INSERT INTO filler VALUES (?)", [(os.urandom(500),)] * 200)
    db.close()
    data = bytearray(path.read_bytes())
    data[4096 * 3:4096 * 4] = b"\xff" * 4096  # no valid page type: always detected
    path.write_bytes(bytes(data))


CORRUPTIONS = {
    "zero-bytes": lambda p: p.write_bytes(b""),
    "garbage": lambda p: p.write_bytes(os.urandom(16384)),
    "damaged-page": damaged_page,
}


@pytest.mark.parametrize("damage", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_an_unusable_database_refuses_to_start_in_one_line(tmp_path: Path, damage) -> None:
    data = tmp_path / "data"
    data.mkdir()
    damage(data / DB)
    before = (data / DB).read_bytes()
    result = serve_once(data)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert str(data / DB) in lines[0]
    assert (data / DB).read_bytes() == before  # left as it was, for the operator
