"""The client's ``credentials`` provider: asked at every token fetch, never in between."""

from __future__ import annotations

import base64

import pytest

from fplus.config_store.client import (
    ConfigStoreClient,
    Credentials,
    MockTransport,
    Request,
    Response,
    Unauthorized,
    reply,
)

BASE = "http://cs.test"
APP = "11111111-1111-1111-1111-111111111111"
OBJ = "22222222-2222-2222-2222-222222222222"
ENTRY = f"/v2/app/{APP}/object/{OBJ}"


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class Rotating:
    """A provider whose password the test changes, counting the calls."""

    def __init__(self) -> None:
        self.password = "old"
        self.calls = 0

    def __call__(self) -> tuple[str, str]:
        self.calls += 1
        return "edge", self.password


def token_server(mock: MockTransport, valid: dict[str, str]) -> None:
    """``POST /token`` issues ``tok-<password>`` for the passwords in ``valid``, else 401."""

    def issue(request: Request) -> Response:
        for password, token in valid.items():
            if request.headers["authorization"] == basic("edge", password):
                return reply(200, {"token": token, "expires_in": 3600})
        return reply(401, {"message": "bad credentials"})

    mock.route("POST", "/token", issue)


def client(mock: MockTransport, provider: Credentials) -> ConfigStoreClient:
    return ConfigStoreClient(BASE, credentials=provider, send=mock, retries=0, backoff=0.0)


def test_provider_is_called_at_each_token_fetch_only() -> None:
    mock = MockTransport()
    token_server(mock, {"old": "tok-old"})
    mock.route("GET", ENTRY, reply(200, {"v": 1}))
    provider = Rotating()
    cs = client(mock, provider)
    assert provider.calls == 0  # not at construction
    for _ in range(3):
        assert cs.get_config(APP, OBJ) == {"v": 1}
    assert provider.calls == 1  # the token is cached
    assert [r.headers["authorization"] for r in mock.calls("POST", "/token")] == \
        [basic("edge", "old")]
    cs.invalidate_token()
    cs.get_config(APP, OBJ)
    assert provider.calls == 2


def test_a_401_fetches_a_token_with_the_new_credentials() -> None:
    mock = MockTransport()
    token_server(mock, {"old": "tok-old", "new": "tok-new"})

    def entry(request: Request) -> Response:
        if request.headers["authorization"] == "Bearer tok-new":
            return reply(200, {"v": 2})
        return reply(401)  # the old password's token was revoked by the rotation

    mock.route("GET", ENTRY, reply(200, {"v": 1}), entry)
    provider = Rotating()
    cs = client(mock, provider)
    assert cs.get_config(APP, OBJ) == {"v": 1}
    provider.password = "new"  # e.g. the mounted Secret file was rewritten
    assert cs.get_config(APP, OBJ) == {"v": 2}
    assert [r.headers["authorization"] for r in mock.calls("POST", "/token")] == \
        [basic("edge", "old"), basic("edge", "new")]
    assert [r.headers["authorization"] for r in mock.calls("GET", ENTRY)] == \
        ["Bearer tok-old", "Bearer tok-old", "Bearer tok-new"]


def test_a_failing_provider_is_unauthorized_and_recovers() -> None:
    mock = MockTransport()
    token_server(mock, {"pw": "tok"})
    mock.route("GET", ENTRY, reply(200, {"v": 1}))
    state = {"broken": True}

    def provider() -> tuple[str, str]:
        if state["broken"]:
            raise FileNotFoundError(2, "No such file or directory", "/creds/password")
        return "edge", "pw"

    cs = client(mock, provider)
    with pytest.raises(Unauthorized) as info:
        cs.get_config(APP, OBJ)
    assert "FileNotFoundError" in str(info.value) and "/creds/password" in str(info.value)
    assert mock.calls("POST", "/token") == []  # nothing sent without credentials
    state["broken"] = False
    assert cs.get_config(APP, OBJ) == {"v": 1}


def test_fixed_credentials_still_work_and_both_kinds_are_refused() -> None:
    mock = MockTransport()
    token_server(mock, {"pw": "tok"})
    mock.route("GET", ENTRY, reply(200, {"v": 1}))
    fixed = ConfigStoreClient(BASE, "edge", "pw", send=mock, retries=0)
    assert fixed.get_config(APP, OBJ) == {"v": 1}
    for both in ({"credentials": lambda: ("edge", "pw")}, {"token": "tok"}):
        with pytest.raises(ValueError, match="give one of"):
            ConfigStoreClient(BASE, "edge", "pw", **both)


def test_a_given_token_is_used_as_it_is_and_a_401_is_final() -> None:
    mock = MockTransport()
    token_server(mock, {"pw": "tok"})
    answers = iter([reply(200, {"v": 1}), reply(401, {"message": "expired"}),
                    reply(401, {"message": "expired"})])
    mock.route("GET", ENTRY, lambda _request: next(answers))
    saved = ConfigStoreClient(BASE, token="saved-session", send=mock, retries=0)
    assert saved.token() == "saved-session"
    assert saved.get_config(APP, OBJ) == {"v": 1}
    with pytest.raises(Unauthorized):
        saved.get_config(APP, OBJ)
    assert mock.calls("POST", "/token") == []  # never asks for a new token
    assert {r.headers["authorization"] for r in mock.calls("GET", ENTRY)} == \
        {"Bearer saved-session"}


def test_without_any_credentials_requests_are_unauthenticated() -> None:
    mock = MockTransport()
    mock.route("GET", ENTRY, reply(200, {"v": 1}))
    cs = ConfigStoreClient(BASE, send=mock, retries=0)
    assert cs.get_config(APP, OBJ) == {"v": 1}
    assert "authorization" not in mock.calls("GET", ENTRY)[0].headers
    with pytest.raises(Unauthorized):
        cs.token()
