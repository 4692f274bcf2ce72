"""Admission control: the token bucket (:mod:`fplus.serving.http.admission`), the Config
Store's gate on new sessions and password checks (503 with ``Retry-After`` before any work),
and the client's back-off with full jitter that honours ``Retry-After``
(:mod:`fplus.config_store.client.backoff`, the transport, the notify client)."""

from __future__ import annotations

import base64
import itertools
import socket
import threading
import time
from email.utils import formatdate
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from fplus.config_store._domain.store import open_store
from fplus.config_store._http.app import Settings, create_app
from fplus.config_store._http.gate import AdmissionSettings
from fplus.config_store.client import ConfigStoreClient, MockTransport, NotifyClient, backoff, reply
from fplus.config_store.client.errors import ServerError
from fplus.serving.http.admission import Admission

pytestmark = pytest.mark.timeout(60)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# -- the bucket ----------------------------------------------------------------------------
def test_the_bucket_lets_a_burst_in_then_the_rate() -> None:
    clock = Clock()
    gate = Admission(10.0, 5, clock=clock)
    assert [gate.admit() for _ in range(5)] == [None] * 5
    assert gate.admit() is not None
    clock.now += 0.1  # one more place
    assert gate.admit() is None
    assert gate.admit() is not None
    clock.now += 100  # refilled to the burst, never past it
    assert [gate.admit() is None for _ in range(6)] == [True] * 5 + [False]
    assert (gate.admitted, gate.refused) == (11, 3)


def test_refusals_are_given_spread_appointments() -> None:
    clock = Clock()
    gate = Admission(10.0, 1, clock=clock)
    gate.admit()
    waits = [w for _ in range(300) if (w := gate.admit()) is not None]  # 30 s of work at 10/s
    assert len(waits) == 300 and all(1 <= w <= 60 for w in waits)
    assert waits[0] == 1 and max(waits) >= 30  # the first told to come back soon, the last late
    assert len(set(waits)) > 20  # spread, not all told the same
    late = [gate.admit() for _ in range(1000)]  # the horizon never passes max_wait
    assert max(w for w in late if w is not None) <= 60


def test_rate_zero_admits_everything() -> None:
    gate = Admission(0.0, 0)
    assert not gate.limited
    assert all(gate.admit() is None for _ in range(10_000))


# -- the Config Store's gate ---------------------------------------------------------------
def _basic(name: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()}


def _app(tmp_path: Path, admission: AdmissionSettings) -> FlaskClient:
    store = open_store(tmp_path / "data", "pw")
    return create_app(store, Settings(admission=admission)).test_client()


UPGRADE = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
           "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}


def test_new_sessions_past_the_rate_get_503_with_retry_after(tmp_path: Path) -> None:
    client = _app(tmp_path, AdmissionSettings(session_rate=0.01, session_burst=2))
    tokens = [client.post("/token", headers=_basic("admin", "pw")) for _ in range(2)]
    assert [r.status_code for r in tokens] == [200, 200]
    refused = client.post("/token", headers=_basic("admin", "pw"))
    assert refused.status_code == 503
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert "busy" in refused.get_json()["error"]
    upgrade = client.get("/notify/v2", headers=UPGRADE)  # refused before the upgrade
    assert upgrade.status_code == 503 and int(upgrade.headers["Retry-After"]) >= 1
    # nothing else is gated: /ping, reads with a token, plain requests
    token = tokens[0].get_json()["token"]
    for _ in range(20):
        assert client.get("/ping").status_code == 200
        assert client.get("/v2/app", headers={"Authorization": f"Bearer {token}"}).status_code \
            == 200


def test_a_refused_session_is_answered_in_front_of_the_app_and_counted(
        tmp_path: Path) -> None:
    """Past the rate, a handshake or a login costs no routing and no hook of the app (a
    replica started under a fleet works through the storm fast); it is still counted under
    its route, and ``/ping`` goes straight through."""
    store = open_store(tmp_path / "data", "pw")
    app = create_app(store, Settings(admission=AdmissionSettings(session_rate=0.01,
                                                                 session_burst=1)))
    reached: list[str] = []
    app.before_request_funcs.setdefault(None, []).insert(0, lambda: reached.append("hook"))
    client = app.test_client()
    assert client.post("/token", headers=_basic("admin", "pw")).status_code == 200
    reached.clear()
    refused = [client.get("/notify/v2", headers=UPGRADE) for _ in range(3)]
    refused.append(client.post("/token", headers=_basic("admin", "pw")))
    assert [r.status_code for r in refused] == [503] * 4 and not reached
    assert all("busy" in r.get_json()["error"] and int(r.headers["Retry-After"]) >= 1
               for r in refused)
    assert client.get("/ping").status_code == 200 and reached == ["hook"]
    metrics = client.get("/metrics").get_data(as_text=True)
    assert 'code="503",method="GET",route="/notify/v2"} 3.0' in metrics
    assert 'code="503",method="POST",route="/token"} 1.0' in metrics


def test_password_checks_past_the_rate_get_503_before_argon2(tmp_path: Path) -> None:
    client = _app(tmp_path, AdmissionSettings(password_rate=0.01, password_burst=1))
    assert client.get("/v2/app", headers=_basic("admin", "pw")).status_code == 200
    # remembered for a minute: no second check, so not gated
    assert client.get("/v2/app", headers=_basic("admin", "pw")).status_code == 200
    wrong = client.get("/v2/app", headers=_basic("admin", "nope"))  # would need argon2
    assert wrong.status_code == 503 and int(wrong.headers["Retry-After"]) >= 1


def test_the_default_password_rate_follows_the_argon2_profile(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from fplus.config_store._domain.core import credentials
    monkeypatch.setenv(credentials.ARGON2_PROFILE_VARIABLE, "CHEAPEST")
    credentials.password_hasher.cache_clear()
    try:
        assert credentials.password_check_rate() == 0  # no work factor: no limit
        monkeypatch.setenv(credentials.ARGON2_PROFILE_VARIABLE, "RFC_9106_LOW_MEMORY")
        credentials.password_hasher.cache_clear()
        assert credentials.password_check_rate() >= 4
    finally:
        credentials.password_hasher.cache_clear()


def test_the_admission_flags_are_checked() -> None:
    from fplus.config_store.main import build_parser
    args = build_parser().parse_args(["serve", "--data-dir", "x", "--admit-rate", "50",
                                      "--admit-burst", "10", "--admit-password-rate", "0"])
    assert (args.admit_rate, args.admit_burst, args.admit_password_rate) == (50, 10, 0)
    for bad in (["--admit-rate", "-1"], ["--admit-burst", "x"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["serve", "--data-dir", "x", *bad])


# -- the client's back-off ------------------------------------------------------------------
def test_full_jitter_spreads_over_the_whole_doubling_window() -> None:
    assert backoff.full_jitter(0, 1, 10) == 0
    draws = [backoff.full_jitter(3, 1.0, 10.0) for _ in range(500)]
    assert all(0 <= d <= 4 for d in draws) and min(draws) < 0.5 and max(draws) > 3.5
    assert all(backoff.full_jitter(50, 1.0, 10.0) <= 10 for _ in range(100))


def test_retry_after_is_read_and_capped() -> None:
    assert backoff.retry_after("7") == 7.0
    assert backoff.retry_after(" 12 ") == 12.0
    assert backoff.retry_after("999999") == backoff.MAX_RETRY_AFTER
    assert backoff.retry_after("soon") is None and backoff.retry_after(None) is None
    later = formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (backoff.retry_after(later) or 0) <= 31
    assert backoff.header_retry_after({"retry-after": "3"}) == 3.0
    assert backoff.next_wait(1, 0.01, 0.02, asked=5.0) == 5.0
    assert backoff.next_wait(1, 0.01, 0.02) <= 0.01


def test_the_transport_waits_as_a_503_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    mock = MockTransport().route("POST", "/token",
                                 reply(503, {"error": "busy"}, headers={"Retry-After": "4"}),
                                 reply(200, {"token": "t" * 88, "expiry": 1e15}))
    cs = ConfigStoreClient("http://cs", "alice", "pw", send=mock, retries=3, backoff=0.01)
    assert cs.token() == "t" * 88
    assert slept == [4.0]  # the Retry-After, longer than the jittered back-off


def test_a_503_past_the_retries_carries_its_retry_after(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "sleep", lambda s: None)
    mock = MockTransport().route("POST", "/token",
                                 reply(503, {"error": "busy"}, headers={"Retry-After": "9"}))
    cs = ConfigStoreClient("http://cs", "alice", "pw", send=mock, retries=1, backoff=0.01)
    with pytest.raises(ServerError) as caught:
        cs.token()
    assert caught.value.status == 503 and caught.value.retry_after == 9.0


def test_the_notify_client_honours_a_busy_handshake() -> None:
    """A server answering every handshake 503 with ``Retry-After: 1``: the client keeps
    trying (never gives up), no sooner than asked, though its own back-off is tiny."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    arrivals: list[float] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                arrivals.append(time.monotonic())
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n"
                             b"Content-Length: 0\r\nConnection: close\r\n\r\n")
    threading.Thread(target=serve, daemon=True).start()
    notify = NotifyClient(ConfigStoreClient(f"http://127.0.0.1:{port}", token="t" * 88),
                          reconnect_delay=(0.01, 0.02))
    try:
        notify.start()
        deadline = time.monotonic() + 10
        while len(arrivals) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(arrivals) >= 3
        gaps = [b - a for a, b in itertools.pairwise(arrivals)]
        assert min(gaps) >= 0.9, gaps
        assert notify.busy_refusals >= 2 and "503" in (notify.problem or "")
    finally:
        notify.close()
        listener.close()
