"""Password rotation with a grace period (extension): ``POST /v2/principal/<p>/password``
with ``{"previousValidFor": s}`` keeps the replaced password valid until the deadline or the
new password's first login, whichever is first; tokens obtained with it end with it.

Principals here get generated passwords (salted SHA-256, cheap to check), so the tests
can log in as often as they like; every check goes over real HTTP.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from typing import Any

import pytest

from fplus.config_store.client import ConfigStoreClient
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.config_store.actors import bearer


def principal(admin: Api) -> tuple[str, str, str]:
    """A principal with a generated password: ``(uuid, name, password)``."""
    name = f"rotating-{uuid.uuid4().hex[:10]}"
    r = admin.post("/v2/principal", json={"name": name})
    assert r.status_code == 201, r.text
    uid = r.json()["uuid"]
    return uid, name, rotate(admin, uid)


def rotate(admin: Api, uid: str, grace: float | None = None) -> str:
    """A new generated password (graceful with ``grace`` seconds)."""
    body = {"json": {"previousValidFor": grace}} if grace is not None else {}
    r = admin.post(f"/v2/principal/{uid}/password", **body)
    assert r.status_code == 200, r.text
    return r.json()["password"]


def login(base: str, name: str, password: str) -> int:
    """The status of a Basic-authenticated request."""
    return Api(base, (name, password)).get("/v2/whoami/uuid").status_code


def token(base: str, name: str, password: str) -> str:
    """A Bearer token from ``POST /token`` (a login too)."""
    r = Api(base, (name, password)).post("/token")
    assert r.status_code == 200, r.text
    return r.json()["token"]


def token_works(base: str, value: str) -> bool:
    r = bearer(base, value).get("/v2/whoami/uuid")
    assert r.status_code in (200, 401), r.text
    return r.status_code == 200


def test_graceful_rotation_keeps_both_until_the_new_one_logs_in(admin: Api) -> None:
    uid, name, old = principal(admin)
    before = time.time()
    r = admin.post(f"/v2/principal/{uid}/password", json={"previousValidFor": 600})
    assert r.status_code == 200, r.text
    new = r.json()["password"]
    assert set(r.json()) == {"password", "previousValidUntil"}
    assert before + 590 < r.json()["previousValidUntil"] / 1000 < time.time() + 610
    assert login(admin.base, name, old) == 200
    assert login(admin.base, name, old) == 200  # remembered: still the previous password
    assert login(admin.base, name, new) == 200  # first use of the new one retires the old
    assert login(admin.base, name, old) == 401
    assert login(admin.base, name, new) == 200


def test_a_token_login_with_the_new_password_retires_the_old(admin: Api) -> None:
    uid, name, old = principal(admin)
    new = rotate(admin, uid, grace=600)
    assert login(admin.base, name, old) == 200
    token(admin.base, name, new)
    assert login(admin.base, name, old) == 401


def test_the_previous_password_expires(admin: Api) -> None:
    uid, name, old = principal(admin)
    new = rotate(admin, uid, grace=1)
    assert login(admin.base, name, old) == 200  # also remembered, but not past the deadline
    time.sleep(1.3)
    assert login(admin.base, name, old) == 401
    assert login(admin.base, name, new) == 200


def test_tokens_of_the_old_password_end_at_its_retirement(admin: Api) -> None:
    uid, name, old = principal(admin)
    issued = token(admin.base, name, old)
    new = rotate(admin, uid, grace=600)
    assert token_works(admin.base, issued)  # the old password is still accepted
    during = token(admin.base, name, old)
    assert token_works(admin.base, during)
    fresh = token(admin.base, name, new)  # the new password's first use retires the old one
    assert not token_works(admin.base, issued) and not token_works(admin.base, during)
    assert token_works(admin.base, fresh)
    assert login(admin.base, name, old) == 401


def test_tokens_of_the_old_password_end_at_the_deadline(admin: Api) -> None:
    uid, name, old = principal(admin)
    issued = token(admin.base, name, old)
    before = time.time()
    new = rotate(admin, uid, grace=2)
    r = Api(admin.base, (name, old)).post("/token")
    assert r.status_code == 200, r.text
    during = r.json()
    # expiry: one minute after the deadline (tokens are refused in their last minute)
    assert before + 2 + 60 - 5 < during["expiry"] / 1000 < time.time() + 2 + 60 + 5
    assert token_works(admin.base, issued) and token_works(admin.base, during["token"])
    time.sleep(2.3)
    assert not token_works(admin.base, issued)
    assert not token_works(admin.base, during["token"])
    assert login(admin.base, name, new) == 200


def test_zero_grace_cuts_the_password_and_its_tokens(admin: Api) -> None:
    uid, name, old = principal(admin)
    issued = token(admin.base, name, old)
    new = rotate(admin, uid, grace=0)
    assert login(admin.base, name, old) == 401
    assert not token_works(admin.base, issued)
    assert login(admin.base, name, new) == 200


def test_rotations_nobody_acted_on_keep_the_password_in_use_and_its_tokens(admin: Api) -> None:
    """Scripts fetched but never run rotate again and again: the running client's password
    and tokens stay (until the new deadline), the unused passwords are dropped."""
    uid, name, first = principal(admin)
    oldest = token(admin.base, name, first)
    second = rotate(admin, uid, grace=600)
    assert token_works(admin.base, oldest)
    third = rotate(admin, uid, grace=600)  # second was never used: first stays previous
    assert token_works(admin.base, oldest)
    assert login(admin.base, name, second) == 401
    assert token_works(admin.base, token(admin.base, name, third))  # first use retires first
    assert not token_works(admin.base, oldest)
    assert login(admin.base, name, first) == 401


def test_a_rotation_after_the_new_password_was_used_ends_the_oldest_tokens(admin: Api) -> None:
    uid, name, first = principal(admin)
    oldest = token(admin.base, name, first)
    second = rotate(admin, uid, grace=600)
    newer = token(admin.base, name, second)  # used: first is retired with its tokens
    assert not token_works(admin.base, oldest)
    rotate(admin, uid, grace=600)  # second is in use: it becomes previous
    assert token_works(admin.base, newer)
    assert login(admin.base, name, second) == 200
    assert login(admin.base, name, first) == 401


@pytest.mark.parametrize("body", [None, {}], ids=["no-body", "empty-object"])
def test_plain_rotation_still_cuts_the_old_password_and_tokens_at_once(
        admin: Api, body: dict[str, Any] | None) -> None:
    uid, name, old = principal(admin)
    issued = token(admin.base, name, old)
    assert login(admin.base, name, old) == 200
    r = admin.post(f"/v2/principal/{uid}/password", json=body) if body is not None else (
        admin.post(f"/v2/principal/{uid}/password"))
    assert r.status_code == 200 and set(r.json()) == {"password"}, r.text
    assert login(admin.base, name, old) == 401
    assert not token_works(admin.base, issued)
    assert login(admin.base, name, r.json()["password"]) == 200


def test_a_second_graceful_rotation_keeps_the_password_in_use(admin: Api) -> None:
    uid, name, first = principal(admin)
    second = rotate(admin, uid, grace=600)
    assert login(admin.base, name, first) == 200  # remembered from here on
    third = rotate(admin, uid, grace=600)
    assert login(admin.base, name, second) == 401  # never used: dropped
    assert login(admin.base, name, first) == 200  # still the one in use
    assert login(admin.base, name, third) == 200
    assert login(admin.base, name, first) == 401  # retired by the first use of third


@pytest.mark.parametrize("how", ["put", "post"])
def test_a_plain_change_drops_the_previous_password(admin: Api, how: str) -> None:
    uid, name, old = principal(admin)
    rotate(admin, uid, grace=600)
    assert login(admin.base, name, old) == 200
    if how == "put":
        assert admin.put(f"/v2/principal/{uid}/password", json="a-chosen-pw").status_code == 204
    else:
        rotate(admin, uid)
    assert login(admin.base, name, old) == 401


BAD_BODIES: list[tuple[str, str, str, int]] = [
    ("array", "[60]", "application/json", 422),
    ("number", "60", "application/json", 422),
    ("string", '"60"', "application/json", 422),
    ("null", "null", "application/json", 422),
    ("unknown-key", '{"previousValidFor": 60, "keep": true}', "application/json", 422),
    ("other-key", '{"validFor": 60}', "application/json", 422),
    ("string-seconds", '{"previousValidFor": "60"}', "application/json", 422),
    ("boolean", '{"previousValidFor": true}', "application/json", 422),
    ("null-seconds", '{"previousValidFor": null}', "application/json", 422),
    ("negative", '{"previousValidFor": -1}', "application/json", 422),
    ("over-a-day", '{"previousValidFor": 86400.5}', "application/json", 422),
    ("infinite", '{"previousValidFor": 1e400}', "application/json", 400),  # not JSON values
    ("nan", '{"previousValidFor": NaN}', "application/json", 400),
    ("not-json", '{"previousValidFor": ', "application/json", 400),
    ("wrong-type", '{"previousValidFor": 60}', "text/plain", 415),
]


@pytest.mark.parametrize(("raw", "content_type", "status"), [b[1:] for b in BAD_BODIES],
                         ids=[b[0] for b in BAD_BODIES])
def test_a_bad_body_is_refused_and_changes_nothing(admin: Api, raw: str, content_type: str,
                                                   status: int) -> None:
    uid, name, old = principal(admin)
    issued = token(admin.base, name, old)
    r = admin.post(f"/v2/principal/{uid}/password", data=raw,
                   headers={"Content-Type": content_type})
    assert r.status_code == status, r.text
    assert "error" in r.json()
    assert login(admin.base, name, old) == 200
    assert token_works(admin.base, issued)


def test_the_limits_are_accepted(admin: Api) -> None:
    uid, _, _ = principal(admin)
    for seconds in (0, 0.5, 86400):
        assert admin.post(f"/v2/principal/{uid}/password",
                          json={"previousValidFor": seconds}).status_code == 200


def test_graceful_rotation_needs_write_kerberos_and_a_principal(admin: Api) -> None:
    uid, name, old = principal(admin)
    r = Api(admin.base, (name, old)).post(f"/v2/principal/{uid}/password",
                                          json={"previousValidFor": 60})
    assert r.status_code == 403, r.text
    assert login(admin.base, name, old) == 200
    assert admin.post(f"/v2/principal/{uuid.uuid4()}/password",
                      json={"previousValidFor": 60}).status_code == 404


def test_the_client_sends_the_grace_period(config_store: ConfigStoreProcess,
                                           admin: Api) -> None:
    uid, name, old = principal(admin)
    client = ConfigStoreClient(config_store.url, "admin", ADMIN_PASSWORD, retries=0)
    new = client.generate_password(uid, previous_valid_for=600)
    assert login(admin.base, name, old) == 200
    assert login(admin.base, name, new) == 200
    assert login(admin.base, name, old) == 401
    newest = client.generate_password(uid)
    assert login(admin.base, name, new) == 401
    assert login(admin.base, name, newest) == 200


# -- durability -----------------------------------------------------------------------
def restart(server: ConfigStoreProcess) -> None:
    server.stop()
    server.start()


def test_a_restart_keeps_the_previous_password(fresh_store: ConfigStoreProcess) -> None:
    admin = Api(fresh_store.url, ("admin", ADMIN_PASSWORD))
    uid, name, old = principal(admin)
    issued = token(admin.base, name, old)
    new = rotate(admin, uid, grace=600)
    restart(fresh_store)
    assert login(admin.base, name, old) == 200
    assert token_works(admin.base, issued)  # tokens are stored: a restart keeps them
    assert login(admin.base, name, new) == 200  # retires the old password ...
    assert not token_works(admin.base, issued)  # ... and what it obtained
    restart(fresh_store)
    assert login(admin.base, name, old) == 401  # the retirement was stored too
    assert login(admin.base, name, new) == 200


def test_a_database_from_before_the_extension_is_migrated(
        fresh_store: ConfigStoreProcess, backend: str) -> None:
    """A principal table without the previous-password columns gains them on start."""
    if backend != "sqlite":
        pytest.skip("a SQLite file from before the extension (PostgreSQL databases get "
                    "versioned migrations: tests/config_store/replicas)")
    admin = Api(fresh_store.url, ("admin", ADMIN_PASSWORD))
    uid, name, old = principal(admin)
    fresh_store.stop()
    db = sqlite3.connect(fresh_store.data_dir / "config-store.db")
    with db:
        db.executescript("""
            CREATE TABLE principal_old (uuid TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                                        password_hash TEXT);
            INSERT INTO principal_old SELECT uuid, name, password_hash FROM principal;
            DROP TABLE principal;
            ALTER TABLE principal_old RENAME TO principal;
        """)
    assert "previous_hash" not in columns(db)
    db.close()
    fresh_store.start()
    assert login(admin.base, name, old) == 200
    new = rotate(admin, uid, grace=600)
    assert login(admin.base, name, old) == 200
    restart(fresh_store)  # a second start finds the columns there: nothing to add
    assert login(admin.base, name, new) == 200
    assert login(admin.base, name, old) == 401
    db = sqlite3.connect(fresh_store.data_dir / "config-store.db")
    assert {"previous_hash", "previous_until"} <= columns(db)
    db.close()


def columns(db: sqlite3.Connection) -> set[str]:
    return {row[1] for row in db.execute("PRAGMA table_info(principal)")}
