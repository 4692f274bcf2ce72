"""What an operator reads: 401 answers that say what is wrong, 422 answers that say it in
words, and a server log free of tracebacks for expected conditions (a wrong password, a
notify client that goes away)."""

from __future__ import annotations

import json
import socket
import struct
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.config_store.actors import bearer, raw_auth
from tests.config_store.notify_helpers import app_parent, get_token, handshake
from tests.conftest import make_object, make_user

CHALLENGE = 'Basic realm="Factory+"'
WRONG = {"error": "wrong username or password"}


def refused(r, error: dict[str, str] | None = None) -> str:
    """Assert a 401 with the challenge; returns its message."""
    assert r.status_code == 401, r.text
    assert r.headers["WWW-Authenticate"] == CHALLENGE
    if error is not None:
        assert r.json() == error
    return r.json()["error"]


# -- 401 ------------------------------------------------------------------------------
def test_a_wrong_password_says_so(admin: Api) -> None:
    _, user = make_user(admin)
    assert user.auth is not None
    refused(Api(admin.base, (user.auth[0], "not-the-password")).get("/v2/whoami"), WRONG)
    refused(Api(admin.base, (user.auth[0], "not-the-password")).post("/token"), WRONG)


def test_an_unknown_user_gets_the_same_answer(admin: Api) -> None:
    refused(Api(admin.base, (f"nobody-{uuid.uuid4().hex[:8]}", "pw")).get("/v2/whoami"), WRONG)


def test_no_credentials_names_the_schemes(anon: Api) -> None:
    message = refused(anon.get("/v2/object"))
    assert message.startswith("credentials required")
    assert "HTTP Basic" in message and "Bearer" in message


def test_an_unknown_token_says_to_log_in_again(anon: Api) -> None:
    fake = bearer(anon.base, "A" * 88)
    refused(fake.get("/v2/whoami"), {"error": "unknown or expired token; log in again"})


@pytest.mark.parametrize("header", ["Basic !!!", "Basic " + "bm9jb2xvbg==", "Digest abc",
                                    "garbage"])
def test_a_malformed_header_says_what_to_use(anon: Api, header: str) -> None:
    message = refused(raw_auth(anon.base, header).get("/v2/whoami"))
    assert "HTTP Basic" in message and "Bearer" in message


def test_public_routes_check_a_sent_header(anon: Api) -> None:
    assert anon.get("/ping").status_code == 200
    refused(Api(anon.base, ("admin", "wrong")).get("/ping"), WRONG)


# -- 422 in words ---------------------------------------------------------------------
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
        "namespace": {"type": "string", "pattern": "^[a-z]+$",
                      "description": "lower-case letters only"},
        "hosts": {"type": "array", "items": {"type": "string", "pattern": "^[a-z.]+$"}},
        "replicas": {"type": "integer"},
    },
}


def test_schema_refusals_say_what_is_wrong_and_where(admin: Api) -> None:
    app = make_object(admin, uuids.Class.App)
    obj = make_object(admin, uuids.Class.Device)
    r = admin.put(f"/v2/app/{uuids.App.ConfigSchema}/object/{app}", json=SCHEMA)
    assert r.status_code in (201, 204), r.text
    r = admin.put(f"/v2/app/{app}/object/{obj}", json={
        "name": "Bad Name", "namespace": "Kube-System", "hosts": ["ok.example", "NOT OK"],
        "replicas": "two"})
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["errors"] == sorted([
        "name: 'Bad Name' does not match the required pattern",
        "namespace: 'Kube-System' does not match the required pattern "
        "(lower-case letters only)",
        "hosts[1]: 'NOT OK' does not match the required pattern",
        "replicas: 'two' is not of type 'integer'",
    ])
    assert "\\" not in body["error"] and "^[" not in body["error"]
    assert body["error"].startswith("schema validation failed: ")
    assert admin.get(f"/v2/app/{app}/object/{obj}").status_code == 404


def test_a_long_value_is_shortened(admin: Api) -> None:
    app = make_object(admin, uuids.Class.App)
    obj = make_object(admin, uuids.Class.Device)
    schema = {"type": "object", "properties": {"a b": {"pattern": "^x$"}}}
    assert admin.put(f"/v2/app/{uuids.App.ConfigSchema}/object/{app}",
                     json=schema).status_code in (201, 204)
    r = admin.put(f"/v2/app/{app}/object/{obj}", json={"a b": "y" * 500})
    assert r.status_code == 422, r.text
    [error] = r.json()["errors"]
    assert error.startswith('["a b"]: \'yyy') and len(error) < 200
    assert error.endswith("...' does not match the required pattern")


# -- no tracebacks for expected conditions --------------------------------------------
@pytest.fixture(scope="module")
def logged_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConfigStoreProcess]:
    """A Config Store of this module's own, so its log holds only these tests' output."""
    server = ConfigStoreProcess(tmp_path_factory.mktemp("logged") / "data").start()
    yield server
    server.stop()


def server_log(server: ConfigStoreProcess) -> str:
    """Everything the server wrote to stdout and stderr so far."""
    return (Path(server.data_dir).parent / f"config_store-{server.port}.log").read_text()


def assert_quiet(text: str) -> None:
    for sign in ("Traceback", "VerifyMismatchError", "BrokenPipeError",
                 "ConnectionResetError", " ERROR "):
        assert sign not in text, text


def test_a_wrong_password_logs_no_traceback(logged_store: ConfigStoreProcess) -> None:
    before = len(server_log(logged_store))
    admin = Api(logged_store.url, ("admin", ADMIN_PASSWORD))
    _, user = make_user(admin)  # an argon2 hash, like the admin's
    assert user.auth is not None
    for name in ("admin", user.auth[0]):
        for _ in range(3):
            refused(Api(logged_store.url, (name, "wrong")).get("/v2/whoami"), WRONG)
    assert admin.get("/v2/whoami").status_code == 200
    assert_quiet(server_log(logged_store)[before:])


def reset(sock: socket.socket) -> None:
    """Close with a TCP reset, as a killed client with unread data does."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def load(admin: Api, dump: dict, statuses: list[int]) -> None:
    statuses.append(admin.post("/load", json=dump, timeout=60).status_code)


def test_a_notify_client_going_away_logs_no_error(logged_store: ConfigStoreProcess) -> None:
    """The client resets its connection while the server is sending it a burst of updates
    (thousands of objects loaded at once): the server's sends fail mid-burst."""
    before = len(server_log(logged_store))
    admin = Api(logged_store.url, ("admin", ADMIN_PASSWORD))
    token = get_token(admin)
    for _ in range(3):
        ws, answer = handshake(logged_store.url, f"Bearer {token}")
        assert answer == "200"
        ws.send(json.dumps({"uuid": str(uuid.uuid4()), "method": "SEARCH",
                            "parent": app_parent(uuids.App.Registration)}))
        assert json.loads(ws.recv())["status"] == 201
        dump = {"service": uuids.Service.ConfigDB, "version": 2, "objects": {
            uuids.Class.Device: {str(uuid.uuid4()): {} for _ in range(3000)}}}
        loaded: list[int] = []
        loader = threading.Thread(target=load, args=(admin, dump, loaded))
        loader.start()
        json.loads(ws.recv())  # the burst has started
        reset(ws.sock)
        loader.join()
        assert loaded == [204]
    abandoned, answer = handshake(logged_store.url, f"Bearer {token}")  # and a plain close
    assert answer == "200"
    abandoned.sock.close()
    assert admin.get("/ping").status_code == 200
    assert_quiet(server_log(logged_store)[before:])
