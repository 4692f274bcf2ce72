"""fplus.serving.startup.boot.ServiceBoot: the start-up steps the Git server, the Cluster
Manager and the Config Store share, each failure one line and exit (the commands themselves
are run by test_startup)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from fplus.serving import Login
from fplus.serving.startup.boot import ServiceBoot


class Failed(Exception):
    def __init__(self, status: int, message: str = "boom") -> None:
        super().__init__(message)
        self.status = status


class Missing(Exception):
    pass


BOOT = ServiceBoot("svc", (Failed,), logging.getLogger("svc-test"))
LOGIN = Login("svc-user", Path("pw-file"), "pw")


def exit_line(call: object) -> str:
    with pytest.raises(SystemExit) as raised:
        call()  # type: ignore[operator]
    return str(raised.value)


def fail(exc: Exception) -> object:
    def step() -> object:
        raise exc
    return step


def test_connect_words_each_failure() -> None:
    url = "http://cs"
    assert "refused svc-user with the password from pw-file" in exit_line(
        lambda: BOOT.connect(url, LOGIN, fail(Failed(401))))
    assert exit_line(lambda: BOOT.connect(url, LOGIN, fail(Failed(403)), {403: "no"})) == \
        "svc: no"
    assert exit_line(lambda: BOOT.connect(url, LOGIN, fail(Failed(0)))).startswith(
        "svc: cannot reach the Config Store at http://cs")
    assert exit_line(lambda: BOOT.connect(url, LOGIN, fail(Failed(500, "bad\n news")))) == \
        "svc: the Config Store at http://cs failed at start-up: bad news"
    assert BOOT.connect(url, LOGIN, lambda: 42) == 42


def test_other_errors_pass_unless_named_plain() -> None:
    with pytest.raises(Missing):
        BOOT.connect("u", LOGIN, fail(Missing("x")))
    with pytest.raises(Missing), BOOT.one_line():
        raise Missing("x")
    with pytest.raises(SystemExit, match=r"^svc: gone$"), BOOT.one_line(plain=(Missing,)):
        raise Missing("gone")


def test_seed_needs_administrator_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FPLUS_PASSWORD", "FPLUS_ADMIN_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    assert "no Config Store credentials" in exit_line(lambda: BOOT.seed("u", lambda: 1))
    monkeypatch.setenv("FPLUS_PASSWORD", "admin-pw")
    assert BOOT.seed("u", lambda: 1) == 1
    assert exit_line(lambda: BOOT.seed("u", fail(Missing("no file")), plain=(Missing,))) == \
        "svc: no file"
    assert "wrong username or password for u" in exit_line(
        lambda: BOOT.seed("u", fail(Failed(401))))


def test_advertise_failures_are_warnings(caplog: pytest.LogCaptureFixture) -> None:
    told: list[str] = []
    with caplog.at_level(logging.WARNING, "svc-test"):
        BOOT.advertise("https://me", told.append)
        BOOT.advertise(None, told.append)
        BOOT.advertise("https://me", lambda at: fail(Failed(403))())
    assert told == ["https://me"]
    assert [r.name for r in caplog.records] == ["svc-test", "svc-test"]
    assert "pass --public-url" in caplog.records[0].message
    assert "cannot advertise https://me" in caplog.records[1].message
