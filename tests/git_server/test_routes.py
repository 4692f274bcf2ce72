"""The Git server's routes in-process, before any Config Store answers.

The app is built from the real parts with a Config Store client pointing at a port where
nothing listens: a request without credentials is refused without asking the Config Store,
so these tests need no server; a request with credentials then meets an unreachable store.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from fplus.config_store.client import Access, ConfigStoreClient
from fplus.git_server._domain.registry import RepoRegistry
from fplus.git_server._domain.storage import RepoStorage
from fplus.git_server._http.app import create_app
from fplus.git_server._http.context import GitServer
from harness.servers import free_port

REPO = "0f5a4b6c-1d2e-4f30-8a1b-2c3d4e5f6a7b"
PUBLIC = {"status.ping", "metrics"}
WEBSOCKET = {"notify.not_upgraded": 426, "notify.notify": 400}
"""``/notify/v2`` (credentials come in the first WebSocket message): a plain GET is answered
426, a ``ws://`` request that is no WebSocket handshake 400."""
SAMPLE = {"repo": REPO, "rest": "info/refs", "group": "tests", "name": "repo"}
UNAUTHENTICATED = {"error": "authentication required"}
BASIC = "Basic " + base64.b64encode(b"someone:secret").decode()


@pytest.fixture
def app(tmp_path: Path) -> Flask:
    client = ConfigStoreClient(f"http://127.0.0.1:{free_port()}", "admin", "unused",
                               timeout=2, retries=0)
    return create_app(GitServer(Access(client, 0), RepoRegistry(client),
                                RepoStorage(tmp_path / "data")))


@pytest.fixture
def http(app: Flask) -> FlaskClient:
    return app.test_client()


def routes(app: Flask) -> list[tuple[str, str, str]]:
    """``(endpoint, method, url)`` for every route, with sample path values."""
    found = []
    with app.test_request_context():
        adapter = app.url_map.bind("localhost")
        for rule in app.url_map.iter_rules():
            values = {arg: SAMPLE[arg] for arg in rule.arguments}
            for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
                found.append((rule.endpoint, method, adapter.build(rule.endpoint, values)))
    return found


def test_every_route_but_ping_and_metrics_needs_credentials(app: Flask, http: FlaskClient) -> None:
    seen = set()
    for endpoint, method, url in routes(app):
        seen.add(endpoint)
        r = http.open(url, method=method)
        if endpoint in PUBLIC:
            assert r.status_code == 200, (method, url)
            continue
        if endpoint in WEBSOCKET:
            assert r.status_code == WEBSOCKET[endpoint], (method, url, r.get_data())
            continue
        assert r.status_code == 401, (method, url, r.get_data())
        assert r.get_json() == UNAUTHENTICATED
        assert r.headers["WWW-Authenticate"] == 'Basic realm="Factory+"'
    assert seen == {"repos.by_uuid", "repos.by_path", "status.ping", "metrics",
                    "status.status_list",
                    "status.status", "storage.storage_list", "storage.storage_delete",
                    *WEBSOCKET}


@pytest.mark.parametrize(("path", "status", "error"), [
    ("/uuid/not-a-uuid/info/refs", 410, "malformed repo uuid 'not-a-uuid'"),
    (f"/uuid/{REPO.upper()}/info/refs", 410, f"malformed repo uuid {REPO.upper()!r}"),
    (f"/uuid/{REPO}%0A/info/refs", 410, f"malformed repo uuid {REPO + chr(10)!r}"),
    (f"/uuid/{REPO}/objects/../HEAD", 400, "dot segments in path"),
    (f"/uuid/{REPO}/HEAD%00", 400, "NUL in path"),
    (f"/uuid/{REPO}/info/refs?service=git-upload-pack&service=git-receive-pack", 400,
     "more than one service parameter"),
])
def test_malformed_repo_requests_are_refused_before_credentials(
        http: FlaskClient, path: str, status: int, error: str) -> None:
    r = http.get(path)
    assert r.status_code == status
    assert r.get_json() == {"error": error}
    assert "WWW-Authenticate" not in r.headers


def test_repo_path_form_is_checked_after_credentials(http: FlaskClient) -> None:
    """``/git/<group>/<name>/…`` asks who calls first (its repo is found by a lookup)."""
    r = http.get("/git/tests/repo/objects/../HEAD")
    assert r.status_code == 401
    assert r.get_json() == UNAUTHENTICATED


def test_status_and_storage_check_credentials_before_the_uuid(http: FlaskClient) -> None:
    for method, path in (("GET", "/v1/status/not-a-uuid"), ("DELETE", "/v1/storage/x")):
        assert http.open(path, method=method).status_code == 401


def test_unreachable_config_store_is_503(http: FlaskClient) -> None:
    for path in (f"/uuid/{REPO}/info/refs", "/git/tests/repo/info/refs", "/v1/status"):
        r = http.get(path, headers={"Authorization": BASIC})
        assert r.status_code == 503, path
        assert r.get_json() == {"error": "the Config Store could not answer"}


def test_http_errors_are_json(http: FlaskClient) -> None:
    r = http.put(f"/uuid/{REPO}/info/refs")
    assert r.status_code == 405
    assert set(r.headers["Allow"].split(", ")) >= {"GET", "POST"}
    assert r.get_json()["error"]
    r = http.get("/nowhere")
    assert r.status_code == 404
    assert r.get_json()["error"]
