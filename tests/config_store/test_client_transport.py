"""The client over an injected transport (``send=``): no server, no sockets."""

from __future__ import annotations

import base64

import pytest
from urllib3.exceptions import NewConnectionError

from fplus.config_store.client import (
    BadRequest,
    ConfigStoreClient,
    ConfigStoreError,
    Conflict,
    ConnectionFailed,
    Forbidden,
    Gone,
    MethodNotAllowed,
    MockTransport,
    NotFound,
    PreconditionFailed,
    Request,
    Response,
    ServerError,
    Unauthorized,
    Unprocessable,
    UnsupportedMediaType,
    reply,
)
from fplus.config_store.uuids import Class

BASE = "http://cs.test"
APP = "11111111-1111-1111-1111-111111111111"
OBJ = "22222222-2222-2222-2222-222222222222"
ENTRY = f"/v2/app/{APP}/object/{OBJ}"
BASIC = "Basic " + base64.b64encode(b"alice:s3cret").decode()


def tokens(mock: MockTransport, *names: str) -> None:
    """Script ``POST /token`` to issue ``names`` in turn (each valid for an hour)."""
    mock.route("POST", "/token", *[reply(200, {"token": n, "expires_in": 3600}) for n in names])


@pytest.fixture
def mock() -> MockTransport:
    mock = MockTransport()
    tokens(mock, "tok1", "tok2", "tok3")
    return mock


@pytest.fixture
def client(mock: MockTransport) -> ConfigStoreClient:
    return ConfigStoreClient(BASE, "alice", "s3cret", retries=3, backoff=0.0, timeout=2.5,
                             send=mock)


def bearers(mock: MockTransport, method: str, path: str) -> list[str]:
    return [r.headers["authorization"] for r in mock.calls(method, path)]


# -- retries --------------------------------------------------------------------------


def test_5xx_is_retried_then_succeeds(mock: MockTransport, client: ConfigStoreClient) -> None:
    mock.route("GET", ENTRY, reply(503, b"busy"), reply(502), reply(200, {"v": 1}))
    assert client.get_config(APP, OBJ) == {"v": 1}
    assert len(mock.calls("GET", ENTRY)) == 3
    assert len(mock.calls("POST", "/token")) == 1


def test_5xx_gives_up_after_the_retries(mock: MockTransport, client: ConfigStoreClient) -> None:
    mock.route("GET", ENTRY, reply(500, {"error": "db"}))
    with pytest.raises(ServerError) as info:
        client.get_config(APP, OBJ)
    assert (info.value.status, info.value.body) == (500, {"error": "db"})
    assert len(mock.calls("GET", ENTRY)) == 4  # 1 + retries


@pytest.mark.parametrize(("status", "error"), [
    (400, BadRequest), (403, Forbidden), (404, NotFound), (405, MethodNotAllowed),
    (409, Conflict), (410, Gone), (412, PreconditionFailed), (415, UnsupportedMediaType),
    (422, Unprocessable), (418, ConfigStoreError),
])
def test_4xx_raises_its_error_class_at_once(
    mock: MockTransport, client: ConfigStoreClient, status: int, error: type[Exception]
) -> None:
    mock.route("PUT", ENTRY, reply(status, {"message": "no"}))
    with pytest.raises(error) as info:
        client.put_config(APP, OBJ, {"a": 1})
    assert type(info.value) is error
    assert isinstance(info.value, ConfigStoreError)
    assert (info.value.status, info.value.body) == (status, {"message": "no"})
    assert len(mock.calls("PUT", ENTRY)) == 1


def test_connection_errors_from_send_are_retried(
    mock: MockTransport, client: ConfigStoreClient
) -> None:
    pool_error = NewConnectionError(None, "refused")  # type: ignore[arg-type]
    mock.route("POST", "/v2/object", ConnectionRefusedError(), pool_error,
               reply(201, {"uuid": OBJ}))
    assert client.create_object(Class.EdgeCluster) == OBJ  # no answer: retried even for POST
    assert len(mock.calls("POST", "/v2/object")) == 3


def test_persistent_connection_errors_raise_connection_failed(
    mock: MockTransport, client: ConfigStoreClient
) -> None:
    mock.route("GET", "/v2/object", ConnectionResetError())
    with pytest.raises(ConnectionFailed) as info:
        client.list_objects()
    assert info.value.status == 0
    assert isinstance(info.value.__cause__, ConnectionResetError)
    assert len(mock.calls("GET", "/v2/object")) == 4


def test_timeouts_are_retried_only_when_idempotent(
    mock: MockTransport, client: ConfigStoreClient
) -> None:
    mock.route("GET", "/v2/object", TimeoutError(), reply(200, [OBJ]))
    assert client.list_objects() == [OBJ]
    mock.route("POST", "/v2/object", TimeoutError())
    with pytest.raises(ConnectionFailed):
        client.create_object(Class.EdgeCluster)
    assert len(mock.calls("POST", "/v2/object")) == 1


# -- authentication -------------------------------------------------------------------


def test_token_is_fetched_once_and_reused(mock: MockTransport, client: ConfigStoreClient) -> None:
    mock.route("GET", "/v2/object", reply(200, [OBJ]))
    client.get_config(APP, OBJ)
    client.list_objects()
    client.list_objects()
    (fetch,) = mock.calls("POST", "/token")
    assert fetch.headers["Authorization"] == BASIC
    assert fetch.body is None
    assert {r.headers["Authorization"] for r in mock.requests if r.path != "/token"} == {
        "Bearer tok1"}


def test_401_refreshes_the_token_once_and_retries(
    mock: MockTransport, client: ConfigStoreClient
) -> None:
    mock.route("GET", ENTRY, reply(200, {"v": 1}), reply(401), reply(200, {"v": 2}))
    assert client.get_config(APP, OBJ) == {"v": 1}
    assert client.get_config(APP, OBJ) == {"v": 2}
    assert len(mock.calls("POST", "/token")) == 2
    assert bearers(mock, "GET", ENTRY) == ["Bearer tok1", "Bearer tok1", "Bearer tok2"]
    mock.route("GET", "/v2/object", reply(200, []))
    client.list_objects()
    assert bearers(mock, "GET", "/v2/object") == ["Bearer tok2"]


def test_persistent_401_raises_after_one_refresh(
    mock: MockTransport, client: ConfigStoreClient
) -> None:
    mock.route("GET", ENTRY, reply(401))
    with pytest.raises(Unauthorized):
        client.get_config(APP, OBJ)
    assert bearers(mock, "GET", ENTRY) == ["Bearer tok1", "Bearer tok2"]
    assert len(mock.calls("POST", "/token")) == 2


def test_refused_credentials_are_not_retried() -> None:
    mock = MockTransport().route("POST", "/token", reply(401))
    cs = ConfigStoreClient(BASE, "alice", "wrong", retries=3, backoff=0.0, send=mock)
    with pytest.raises(Unauthorized):
        cs.list_objects()
    assert [r.path for r in mock.requests] == ["/token"]


def test_without_credentials_nothing_is_authenticated() -> None:
    mock = MockTransport().route("GET", "/ping", reply(200, {"version": "1"}))
    assert ConfigStoreClient(BASE, send=mock).ping() == {"version": "1"}
    (ping,) = mock.requests
    assert "Authorization" not in ping.headers
    assert ping.headers["Accept"] == "application/json"


# -- what goes on the wire ------------------------------------------------------------


@pytest.mark.parametrize(("given", "sent"), [
    ("e1", '"e1"'), ('"e1"', '"e1"'), ('W/"e1"', 'W/"e1"'), ("*", "*"),
])
def test_if_match_is_quoted_when_bare(
    mock: MockTransport, client: ConfigStoreClient, given: str, sent: str
) -> None:
    mock.route("PUT", ENTRY, reply(204, headers={"etag": '"e2"'}))
    assert client.put_config(APP, OBJ, {"a": 1}, if_match=given) == "e2"
    (put,) = mock.calls("PUT", ENTRY)
    assert put.headers["If-Match"] == sent
    assert "If-None-Match" not in put.headers


def test_put_sends_json_and_if_none_match(mock: MockTransport, client: ConfigStoreClient) -> None:
    mock.route("PUT", ENTRY, reply(201))
    assert client.put_config(APP, OBJ, None, if_none_match="*") is None
    (put,) = mock.calls("PUT", ENTRY)
    assert (put.body, put.headers["Content-Type"]) == (b"null", "application/json")
    assert put.headers["If-None-Match"] == "*"
    assert put.timeout == 2.5


def test_patch_sends_a_merge_patch(mock: MockTransport, client: ConfigStoreClient) -> None:
    mock.route("PATCH", ENTRY, reply(204, headers={"ETag": 'W/"e3"'}))
    assert client.patch_config(APP, OBJ, {"a": None, "b": 2}, if_match="e2") == "e3"
    (patch,) = mock.calls("PATCH", ENTRY)
    assert patch.headers["Content-Type"] == "application/merge-patch+json"
    assert patch.json() == {"a": None, "b": 2}
    assert patch.headers["If-Match"] == '"e2"'


def test_get_carries_no_body(mock: MockTransport, client: ConfigStoreClient) -> None:
    mock.route("GET", ENTRY, reply(200, {"a": 1}, {"ETag": '"e1"'}))
    assert client.get_config_with_etag(APP, OBJ) == ({"a": 1}, "e1")
    (get,) = mock.calls("GET", ENTRY)
    assert get.body is None
    assert "Content-Type" not in get.headers


def test_search_parameters(mock: MockTransport, client: ConfigStoreClient) -> None:
    path = f"/v1/app/{APP}/search"
    mock.route("GET", path, reply(200, [OBJ]))
    assert client.search(APP, {"name": "x", "gone": None}, select={"n": "name"}) == [OBJ]
    assert mock.calls("GET", path)[0].params == [
        ("name", '"x"'), ("gone", "undefined"), ("@n", "name")]


# -- the helper itself ----------------------------------------------------------------


def test_mock_transport_routes_handlers_and_fallback() -> None:
    seen: list[Request] = []

    def echo(request: Request) -> Response:
        seen.append(request)
        return reply(200, {"got": request.json()})

    mock = MockTransport(fallback=lambda request: reply(599, b"unrouted"))
    mock.route("POST", "/load", echo)
    cs = ConfigStoreClient(BASE + "/", send=mock, retries=0)
    cs.load_dump({"objects": {}})
    cs.load_dump({"objects": {}})
    assert [r.url for r in seen] == [f"{BASE}/load"] * 2  # a handler answers every time
    with pytest.raises(ServerError) as info:
        cs.list_objects()
    assert info.value.body == "unrouted"
    assert MockTransport()("GET", f"{BASE}/x", None, {}, 1.0).status_code == 404
    with pytest.raises(ValueError):
        mock.route("GET", "/x")


def test_the_default_transport_is_the_pool() -> None:
    cs = ConfigStoreClient(BASE)
    assert cs._t.send is None
    cs.close()
