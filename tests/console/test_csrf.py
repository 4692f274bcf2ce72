"""The console's session cookie and CSRF defence, outside the browser: a form without the
session's token is refused with 403 and changes nothing; the cookie carries the flags the
browser needs to keep it to this site."""

from __future__ import annotations

import re

import requests

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD
from harness.stack import Stack, create_cluster, status, wait_for
from tests.console.conftest import cluster_names, console_session

REQUEST_APP = uuids.App.EdgeClusterRequest


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found, "no CSRF field on the page"
    return found.group(1)


def _redeploy_requested(stack: Stack, cluster: str) -> bool:
    r = stack.admin.get(f"/v2/app/{REQUEST_APP}/object/{cluster}")
    return r.status_code == 200 and "redeploy" in r.json()


def test_forms_without_the_session_token_are_refused(stack: Stack) -> None:
    cluster = create_cluster(stack.admin, "csrf-edge")
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what="csrf-edge ready")
    session, page = console_session(stack)
    action = f"{stack.manager.url}/ui/cluster/{cluster}/redeploy"
    for form in ({}, {"csrf": ""}, {"csrf": "0" * 64}, {"csrf": _csrf(page)[:-1] + "x"}):
        r = session.post(action, data=form, allow_redirects=False)
        assert r.status_code == 403, (form, r.status_code)
        assert "CSRF token is missing or wrong" in r.text
    assert not _redeploy_requested(stack, cluster)

    # Another session's token does not fit this session either.
    _, other_page = console_session(stack)
    r = session.post(action, data={"csrf": _csrf(other_page)}, allow_redirects=False)
    assert _csrf(other_page) != _csrf(page) and r.status_code == 403
    assert not _redeploy_requested(stack, cluster)

    r = session.post(action, data={"csrf": _csrf(page)}, allow_redirects=False)
    assert r.status_code == 303 and r.headers["Location"].endswith("done=redeploy")
    assert _redeploy_requested(stack, cluster)


def test_session_cookie_flags_and_sign_in_rules(stack: Stack) -> None:
    base = f"{stack.manager.url}/ui"
    r = requests.post(f"{base}/login", data={"username": "admin", "password": ADMIN_PASSWORD},
                      allow_redirects=False)
    assert r.status_code == 303 and r.headers["Location"] == "/ui/"
    cookie = r.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/ui/" in cookie
    assert "Secure" not in cookie  # plain HTTP here; test_up_tls covers the HTTPS stack
    assert ADMIN_PASSWORD not in cookie

    # A sign-in posted from another site's page is refused, and no session starts.
    r = requests.post(f"{base}/login", headers={"Origin": "https://evil.example"},
                      data={"username": "admin", "password": ADMIN_PASSWORD},
                      allow_redirects=False)
    assert r.status_code == 403 and "Set-Cookie" not in r.headers

    # After sign-in the console goes only to its own pages.
    r = requests.post(f"{base}/login", allow_redirects=False,
                      data={"username": "admin", "password": ADMIN_PASSWORD,
                            "next": "//evil.example/ui/"})
    assert r.headers["Location"] == "/ui/"

    # Without a session every page and action leads to sign-in, and nothing is done.
    r = requests.get(f"{base}/", allow_redirects=False)
    assert r.status_code == 303 and "/ui/login" in r.headers["Location"]
    r = requests.post(f"{base}/new", data={"name": "no-session"}, allow_redirects=False)
    assert r.status_code == 303 and "/ui/login" in r.headers["Location"]
    assert "no-session" not in cluster_names(stack)
    # A forged cookie is no session either.
    r = requests.get(f"{base}/", cookies={"fplus_console": "YWRtaW4.not-a-token"},
                     allow_redirects=False)
    assert r.status_code == 303 and "reason=expired" in r.headers["Location"]

    # Pages are not cached, framed, or allowed foreign scripts.
    session, _ = console_session(stack)
    r = session.get(f"{base}/")
    assert r.headers["Cache-Control"] == "no-store"
    assert "frame-ancestors 'none'" in r.headers["Content-Security-Policy"]
    assert "script-src 'self'" in r.headers["Content-Security-Policy"]
