"""Unit tests of config_store.client against a scripted fake server (no real Config Store)."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from flask import Flask, Response, request
from werkzeug.serving import make_server

from fplus.config_store.client import (
    ConfigStoreClient,
    Conflict,
    ConnectionFailed,
    Forbidden,
    NotFound,
    PreconditionFailed,
    ServerError,
    Unauthorized,
    client_from_env,
)
from fplus.config_store.client._token import parse_token_response
from fplus.config_store.uuids import App, Class

APP = "11111111-1111-1111-1111-111111111111"
OBJ = "22222222-2222-2222-2222-222222222222"
ENTRY = f"/v2/app/{APP}/object/{OBJ}"


@dataclass
class Seen:
    """One request the fake server received."""

    method: str
    path: str
    headers: dict[str, str]
    args: list[tuple[str, str]]
    body: bytes


@dataclass
class FakeServer:
    """Scripted state: answers queued per (method, path), tokens issued and accepted."""

    url: str = ""
    scripts: dict[tuple[str, str], list[tuple[int, Any, dict[str, str]]]] = field(
        default_factory=dict
    )
    seen: list[Seen] = field(default_factory=list)
    token_basic: list[str] = field(default_factory=list)
    valid_tokens: set[str] = field(default_factory=set)
    token_lifetime: float = 3600.0

    def script(self, method: str, path: str, *answers: tuple[int, Any, dict[str, str]]) -> None:
        self.scripts.setdefault((method, path), []).extend(answers)

    def calls(self, method: str, path: str) -> list[Seen]:
        return [s for s in self.seen if s.method == method and s.path == path]


def _answer(status: int, body: Any, headers: dict[str, str]) -> Response:
    if body is None:
        return Response(status=status, headers=headers)
    if isinstance(body, str) and status >= 400:
        return Response(body, status=status, headers=headers, content_type="text/plain")
    return Response(json.dumps(body), status=status, headers=headers,
                    content_type="application/json")


def _make_app(state: FakeServer) -> Flask:
    app = Flask("fake-config-store")

    @app.post("/token")
    def token() -> Response:
        state.token_basic.append(request.headers.get("Authorization", ""))
        if request.headers.get("Authorization") != "Basic " + base64.b64encode(
            b"alice:s3cret"
        ).decode():
            return _answer(401, None, {})
        tok = f"tok{len(state.token_basic)}"
        state.valid_tokens.add(tok)
        expiry = int((time.time() + state.token_lifetime) * 1000)
        return _answer(200, {"token": tok, "expiry": expiry}, {})

    @app.route("/<path:rest>", methods=["GET", "PUT", "POST", "PATCH", "DELETE"])
    def anything(rest: str) -> Response:
        path = "/" + rest
        state.seen.append(Seen(request.method, path, dict(request.headers),
                               list(request.args.items(multi=True)), request.get_data()))
        if path != "/ping":
            auth = request.headers.get("Authorization", "")
            if not auth.startswith("Bearer ") or auth[7:] not in state.valid_tokens:
                return _answer(401, None, {})
        queue = state.scripts.get((request.method, path))
        if queue:
            return _answer(*queue.pop(0))
        return _answer(200, {"ok": True}, {})

    return app


@pytest.fixture
def server() -> Iterator[FakeServer]:
    state = FakeServer()
    httpd = make_server("127.0.0.1", 0, _make_app(state), threaded=True)
    state.url = f"http://127.0.0.1:{httpd.server_port}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        thread.join(timeout=5)


@pytest.fixture
def client(server: FakeServer) -> Iterator[ConfigStoreClient]:
    cs = ConfigStoreClient(server.url, "alice", "s3cret", timeout=2.0, retries=3, backoff=0.001)
    yield cs
    cs.close()


# -- authentication -----------------------------------------------------------


def test_token_is_fetched_once_and_reused(server: FakeServer, client: ConfigStoreClient) -> None:
    client.get_config(APP, OBJ)
    client.get_config(APP, OBJ)
    client.list_objects()
    assert len(server.token_basic) == 1
    assert {s.headers["Authorization"] for s in server.seen} == {"Bearer tok1"}
    assert client.token() == "tok1"


def test_401_refetches_the_token_and_retries_once(
    server: FakeServer, client: ConfigStoreClient
) -> None:
    assert client.get_config(APP, OBJ) == {"ok": True}
    server.valid_tokens.clear()  # the server forgets tok1
    assert client.get_config(APP, OBJ) == {"ok": True}
    assert len(server.token_basic) == 2
    auths = [s.headers["Authorization"] for s in server.calls("GET", ENTRY)]
    assert auths == ["Bearer tok1", "Bearer tok1", "Bearer tok2"]


def test_persistent_401_raises_after_one_retry(
    server: FakeServer, client: ConfigStoreClient
) -> None:
    server.script("GET", ENTRY, (401, None, {}), (401, None, {}), (401, None, {}))
    with pytest.raises(Unauthorized) as info:
        client.get_config(APP, OBJ)
    assert info.value.status == 401
    assert len(server.calls("GET", ENTRY)) == 2
    assert len(server.token_basic) == 2


def test_bad_credentials_raise_unauthorized(server: FakeServer) -> None:
    cs = ConfigStoreClient(server.url, "alice", "wrong", retries=3, backoff=0.001)
    with pytest.raises(Unauthorized):
        cs.get_config(APP, OBJ)
    assert len(server.token_basic) == 1  # 4xx is not retried
    assert server.seen == []


def test_token_near_expiry_is_refetched(server: FakeServer, client: ConfigStoreClient) -> None:
    server.token_lifetime = -1.0  # already expired when issued
    client.list_objects()
    client.list_objects()
    assert len(server.token_basic) == 2


def test_parse_token_response_forms() -> None:
    now = 1_700_000_000.0
    ms = 1_700_000_500_000
    assert parse_token_response({"token": "t", "expiry": ms}, now) == ("t", now + 500)
    assert parse_token_response({"token": "t", "expires_in": 30}, now) == ("t", now + 30)
    assert parse_token_response({"access_token": "t", "expiry": now + 5}, now) == ("t", now + 5)
    with pytest.raises(ValueError):
        parse_token_response({"nope": 1}, now)


def test_ping_needs_no_auth(server: FakeServer) -> None:
    server.script("GET", "/ping", (200, {"version": "1"}, {}))
    cs = ConfigStoreClient(server.url)
    assert cs.ping() == {"version": "1"}
    assert "Authorization" not in server.seen[0].headers
    assert server.token_basic == []


# -- retries and errors -------------------------------------------------------


def test_5xx_is_retried_until_success(server: FakeServer, client: ConfigStoreClient) -> None:
    server.script("GET", ENTRY, (503, "busy", {}), (503, "busy", {}), (200, {"v": 1}, {}))
    assert client.get_config(APP, OBJ) == {"v": 1}
    assert len(server.calls("GET", ENTRY)) == 3


def test_5xx_gives_up_after_the_retries(server: FakeServer, client: ConfigStoreClient) -> None:
    server.script("GET", ENTRY, *[(500, {"error": "db"}, {})] * 10)
    with pytest.raises(ServerError) as info:
        client.get_config(APP, OBJ)
    assert info.value.status == 500
    assert info.value.body == {"error": "db"}
    assert len(server.calls("GET", ENTRY)) == 4  # 1 + retries


def test_4xx_is_not_retried(server: FakeServer, client: ConfigStoreClient) -> None:
    server.script("GET", ENTRY, (403, "no", {}))
    with pytest.raises(Forbidden) as info:
        client.get_config(APP, OBJ)
    assert (info.value.status, info.value.body) == (403, "no")
    assert len(server.calls("GET", ENTRY)) == 1


def test_connection_errors_are_retried_then_raised() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cs = ConfigStoreClient(f"http://127.0.0.1:{port}", retries=2, backoff=0.001, timeout=1.0)
    with pytest.raises(ConnectionFailed) as info:
        cs.ping()
    assert info.value.status == 0


def test_404_on_get_config_is_none(server: FakeServer, client: ConfigStoreClient) -> None:
    server.script("GET", ENTRY, (404, None, {}), (404, None, {}))
    assert client.get_config(APP, OBJ) is None
    assert client.get_config_with_etag(APP, OBJ) == (None, None)


def test_409_raises_conflict_with_parsed_body(
    server: FakeServer, client: ConfigStoreClient
) -> None:
    server.script("PUT", ENTRY, (409, {"message": "clash"}, {}))
    with pytest.raises(Conflict) as info:
        client.put_config(APP, OBJ, {"a": 1})
    assert info.value.status == 409
    assert info.value.body == {"message": "clash"}


# -- config entries -----------------------------------------------------------


def test_put_and_get_carry_etags(server: FakeServer, client: ConfigStoreClient) -> None:
    server.script("PUT", ENTRY, (201, None, {"ETag": '"e1"'}))
    server.script("GET", ENTRY, (200, {"a": 1}, {"ETag": '"e1"'}))
    assert client.put_config(APP, OBJ, {"a": 1}, if_none_match="*") == "e1"
    assert client.get_config_with_etag(APP, OBJ) == ({"a": 1}, "e1")
    put = server.calls("PUT", ENTRY)[0]
    assert put.headers["Content-Type"] == "application/json"
    assert put.headers["If-None-Match"] == "*"
    assert json.loads(put.body) == {"a": 1}


def test_put_null_sends_a_json_null_and_if_match_is_quoted(
    server: FakeServer, client: ConfigStoreClient
) -> None:
    server.script("PUT", ENTRY, (412, None, {}))
    with pytest.raises(PreconditionFailed):
        client.put_config(APP, OBJ, None, if_match="e1")
    put = server.calls("PUT", ENTRY)[0]
    assert put.body == b"null"
    assert put.headers["If-Match"] == '"e1"'


def test_patch_sends_merge_patch(server: FakeServer, client: ConfigStoreClient) -> None:
    server.script("PATCH", ENTRY, (204, None, {"ETag": '"e2"'}))
    assert client.patch_config(APP, OBJ, {"a": None, "b": 2}) == "e2"
    patch = server.calls("PATCH", ENTRY)[0]
    assert patch.headers["Content-Type"] == "application/merge-patch+json"
    assert json.loads(patch.body) == {"a": None, "b": 2}


def test_patch_with_none_deletes(server: FakeServer, client: ConfigStoreClient) -> None:
    server.script("DELETE", ENTRY, (204, None, {}))
    assert client.patch_config(APP, OBJ, None) is None
    assert [s.method for s in server.seen] == ["DELETE"]


def test_delete_config_ignores_404_unless_if_match(
    server: FakeServer, client: ConfigStoreClient
) -> None:
    server.script("DELETE", ENTRY, (404, None, {}), (404, None, {}))
    client.delete_config(APP, OBJ)
    with pytest.raises(NotFound):
        client.delete_config(APP, OBJ, if_match="e1")


def test_search_query_encoding(server: FakeServer, client: ConfigStoreClient) -> None:
    path = f"/v1/app/{APP}/class/{Class.EdgeCluster}/search"
    server.script("GET", path, (200, {OBJ: {"n": "x"}}, {}))
    found = client.search(
        APP,
        {"name": "x", "spec.count": 3, "flag": True, "gone": None},
        select={"n": "name"},
        klass=Class.EdgeCluster,
    )
    assert found == {OBJ: {"n": "x"}}
    assert server.calls("GET", path)[0].args == [
        ("name", '"x"'),
        ("spec.count", "3"),
        ("flag", "true"),
        ("gone", "undefined"),
        ("@n", "name"),
    ]


def test_search_without_class(server: FakeServer, client: ConfigStoreClient) -> None:
    server.script("GET", f"/v1/app/{APP}/search", (200, [OBJ], {}))
    assert client.search(APP, {"a": {"b": 1}}) == [OBJ]
    assert server.seen[0].args == [("a", '{"b":1}')]


# -- objects, classes, auth ----------------------------------------------------


def test_create_object_returns_the_registration_uuid(
    server: FakeServer, client: ConfigStoreClient
) -> None:
    reg = {"uuid": OBJ, "class": Class.EdgeCluster, "rank": 0, "owner": APP, "deleted": False}
    server.script("POST", "/v2/object", (201, reg, {}))
    assert client.create_object(Class.EdgeCluster, owner=APP) == OBJ
    assert json.loads(server.seen[0].body) == {"class": Class.EdgeCluster, "owner": APP}


def test_set_name_creates_the_info_entry_when_absent(
    server: FakeServer, client: ConfigStoreClient
) -> None:
    info = f"/v2/app/{App.Info}/object/{OBJ}"
    server.script("PATCH", info, (404, None, {}))
    server.script("PUT", info, (201, None, {}))
    client.set_name(OBJ, "edge-1")
    assert [s.method for s in server.seen] == ["PATCH", "PUT"]
    assert json.loads(server.seen[1].body) == {"name": "edge-1"}


def test_auth_helpers(server: FakeServer, client: ConfigStoreClient) -> None:
    server.script("GET", "/v2/identity/kerberos/bob@REALM", (404, None, {}))
    server.script("POST", "/v2/grant/find", (200, ["g1"], {}))
    server.script("POST", "/v2/principal", (201, {"uuid": OBJ, "name": "bob"}, {}))
    assert client.find_principal("bob@REALM") is None
    assert client.find_grants(principal=OBJ, plural=False) == ["g1"]
    assert json.loads(server.calls("POST", "/v2/grant/find")[0].body) == {
        "principal": OBJ, "plural": False,
    }
    assert client.create_principal("bob", password="pw") == OBJ
    client.set_password(OBJ, "pw2")
    assert json.loads(server.calls("PUT", f"/v2/principal/{OBJ}/password")[0].body) == "pw2"


def test_client_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFIG_STORE_URL", "http://cs.example:9/")
    monkeypatch.setenv("FPLUS_USER", "svc")
    monkeypatch.delenv("FPLUS_PASSWORD", raising=False)
    monkeypatch.setenv("FPLUS_ADMIN_PASSWORD", "pw")
    cs = client_from_env()
    assert cs.base_url == "http://cs.example:9"
    assert client_from_env("http://other").base_url == "http://other"
