"""Signing out of the console ends the session, and a password change ends it at once.

The probe: logout only cleared the cookie, whose Config Store token stayed valid (the replayed
cookie still answered 200, the token still answered ``/v2/whoami`` as admin), and after a
password change the old cookie still worked for ~10 s.
"""

from __future__ import annotations

import re

import pytest
import requests

from harness.servers import ADMIN_PASSWORD
from harness.stack import Stack
from tests.config_store.notify_helpers import get_token, handshake, read_close
from tests.conftest import make_user
from tests.console.conftest import console_session

COOKIE = "fplus_console"


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at objects of their own."""
    return shared_stack


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found, "no CSRF field on the page"
    return found.group(1)


def _token(session: requests.Session) -> str:
    return session.cookies[COOKIE].partition(".")[2]


def _page(stack: Stack, cookie: str) -> requests.Response:
    """The cluster list with only ``cookie``, as a replaying attacker sends it."""
    return requests.get(f"{stack.manager.url}/ui/", cookies={COOKIE: cookie}, timeout=10,
                        allow_redirects=False)


def test_logout_ends_the_token_itself(stack: Stack) -> None:
    session, page = console_session(stack)
    cookie, token = session.cookies[COOKIE], _token(session)
    bearer = {"Authorization": f"Bearer {token}"}
    assert requests.get(f"{stack.store.url}/v2/whoami", headers=bearer, timeout=10).ok
    ws, answer = handshake(stack.store.url, f"Bearer {token}")
    assert answer.startswith("200"), answer
    other, _ = console_session(stack)  # the same user, signed in elsewhere

    r = session.post(f"{stack.manager.url}/ui/logout", data={"csrf": _csrf(page)},
                     allow_redirects=False, timeout=10)
    assert r.status_code == 303

    replayed = _page(stack, cookie)
    assert replayed.status_code == 303 and "/ui/login" in replayed.headers["Location"]
    assert requests.get(f"{stack.store.url}/v2/whoami", headers=bearer,
                        timeout=10).status_code == 401
    assert requests.get(f"{stack.manager.url}/v1/cluster", headers=bearer,
                        timeout=10).status_code == 401
    code, _ = read_close(ws)  # the notify session it opened is closed too
    assert code is not None
    ws.close()
    assert _page(stack, other.cookies[COOKIE]).status_code == 200  # only that session ended


def test_a_password_change_ends_console_sessions_at_once(stack: Stack) -> None:
    uid, user = make_user(stack.admin)
    session, _ = console_session(stack, user.auth[0], user.auth[1])
    cookie = session.cookies[COOKIE]
    assert _page(stack, cookie).status_code == 200
    r = stack.admin.put(f"/v2/principal/{uid}/password", json="a-new-password-123")
    assert r.status_code == 204, r.text
    ended = _page(stack, cookie)  # no waiting: the very next page is refused
    assert ended.status_code == 303 and "reason=expired" in ended.headers["Location"]


def test_delete_token_on_the_config_store(stack: Stack) -> None:
    admin = stack.admin
    r = admin.delete("/token")  # Basic: no token to end
    assert r.status_code == 422 and "Bearer" in r.json()["error"]
    token, kept = get_token(admin), get_token(admin)
    ended = requests.delete(f"{stack.store.url}/token", timeout=10,
                            headers={"Authorization": f"Bearer {token}"})
    assert ended.status_code == 204
    for method in ("get", "delete"):
        again = requests.request(method, f"{stack.store.url}/v2/whoami" if method == "get"
                                 else f"{stack.store.url}/token", timeout=10,
                                 headers={"Authorization": f"Bearer {token}"})
        assert again.status_code == 401
    assert requests.get(f"{stack.store.url}/v2/whoami", timeout=10,
                        headers={"Authorization": f"Bearer {kept}"}).ok
    assert requests.post(f"{stack.store.url}/token", auth=("admin", ADMIN_PASSWORD),
                         timeout=10).ok  # and signing in again works
