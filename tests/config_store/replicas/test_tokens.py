"""Tokens and passwords across replicas: a token from one replica works on the other and
survives restarting both; a password change through one ends the tokens, remembered logins
and notify sessions obtained on the other, and so does ending one token (``DELETE /token``)."""

from __future__ import annotations

from harness.servers import Api
from tests.config_store.notify_helpers import RawNotify, handshake
from tests.config_store.test_password_rotation import login, principal, rotate, token, token_works

from .pair import Replicas, eventually


def whoami(base: str, value: str) -> str:
    r = Api(base, None).get("/v2/whoami/uuid", headers={"Authorization": f"Bearer {value}"})
    assert r.status_code == 200, r.text
    return r.json()


def test_a_token_from_a_works_on_b_over_http_and_notify(pair: Replicas) -> None:
    uid, name, password = principal(pair.admin(0))
    issued = token(pair.a.url, name, password)
    assert whoami(pair.b.url, issued) == uid
    ws, answer = handshake(pair.b.url, f"Bearer {issued}")
    ws.close()
    assert answer == "200"


def test_a_password_change_through_a_ends_the_token_and_old_password_on_b(
        pair: Replicas) -> None:
    uid, name, old = principal(pair.admin(0))
    issued = token(pair.a.url, name, old)
    assert token_works(pair.b.url, issued)  # both now known to B (cached)
    assert login(pair.b.url, name, old) == 200
    with RawNotify(pair.b.url, issued) as ws:
        new = rotate(pair.admin(0), uid)
        eventually(lambda: not token_works(pair.b.url, issued), "the token refused on B")
        eventually(lambda: login(pair.b.url, name, old) == 401, "the old password refused on B")
        assert ws.is_closed_by_server(), "B's notify session outlived its token"
    assert login(pair.b.url, name, new) == 200
    assert whoami(pair.b.url, token(pair.b.url, name, new)) == uid


def test_deleting_the_principal_through_a_ends_its_token_on_b(pair: Replicas) -> None:
    uid, name, password = principal(pair.admin(0))
    issued = token(pair.b.url, name, password)
    assert token_works(pair.b.url, issued) and login(pair.b.url, name, password) == 200
    assert pair.admin(0).delete(f"/v2/principal/{uid}").status_code == 204
    eventually(lambda: not token_works(pair.b.url, issued), "the token refused on B")
    eventually(lambda: login(pair.b.url, name, password) == 401, "the password refused on B")


def test_a_token_ended_through_a_is_refused_on_b_with_its_notify_session(
        pair: Replicas) -> None:
    uid, name, password = principal(pair.admin(0))
    issued, kept = token(pair.a.url, name, password), token(pair.a.url, name, password)
    assert token_works(pair.b.url, issued) and token_works(pair.b.url, kept)  # cached on B
    with RawNotify(pair.b.url, issued) as ws:
        r = Api(pair.a.url, None).delete("/token", headers={"Authorization": f"Bearer {issued}"})
        assert r.status_code == 204, r.text
        eventually(lambda: not token_works(pair.b.url, issued), "the token refused on B")
        assert ws.is_closed_by_server(), "B's notify session outlived its token"
    assert whoami(pair.b.url, kept) == uid  # the principal's other token is untouched


def test_the_new_passwords_first_use_on_b_retires_the_old_one_on_a(pair: Replicas) -> None:
    uid, name, old = principal(pair.admin(0))
    old_token = token(pair.a.url, name, old)
    new = rotate(pair.admin(0), uid, grace=600)
    assert login(pair.a.url, name, old) == 200  # still accepted (and remembered by A)
    assert login(pair.b.url, name, new) == 200  # the new one's first use: the old retires
    eventually(lambda: login(pair.a.url, name, old) == 401, "the old password refused on A")
    eventually(lambda: not token_works(pair.a.url, old_token), "the old token refused on A")
    assert login(pair.a.url, name, new) == 200


def test_tokens_survive_restarting_both_replicas(pair: Replicas) -> None:
    uid, name, password = principal(pair.admin(0))
    from_a, from_b = token(pair.a.url, name, password), token(pair.b.url, name, password)
    pair.restart()
    for base in (pair.a.url, pair.b.url):
        assert whoami(base, from_a) == uid and whoami(base, from_b) == uid
