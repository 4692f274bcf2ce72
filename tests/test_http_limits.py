"""serving's request limits in isolation: the FPLUS_HTTP_* settings, bodies read against the
clock, JSON at the door. The hostile suite (tests/hostile/test_http.py) drives the same code
through real servers."""

from __future__ import annotations

import io

import pytest

from fplus.serving.http.bodyread import BodyTimeout, TimedInput
from fplus.serving.http.httplimits import HttpLimits, http_limits
from fplus.serving.http.jsondoc import JSONRejected, loads_checked

# -- settings -------------------------------------------------------------------------


def test_defaults_and_the_per_address_cap_follow_the_connections() -> None:
    assert http_limits(2000, {}) == HttpLimits(connections_per_ip=1000)
    assert http_limits(1, {}).connections_per_ip == 1
    limits = http_limits(100, {"FPLUS_HTTP_HEADER_TIMEOUT": "2.5", "FPLUS_HTTP_IDLE_TIMEOUT": "1",
                               "FPLUS_HTTP_BODY_TIMEOUT": " 3 ", "FPLUS_HTTP_BODY_MIN_RATE": "0",
                               "FPLUS_HTTP_CONNECTIONS_PER_IP": "0"})
    assert limits == HttpLimits(2.5, 1.0, 3.0, 0, 0)


@pytest.mark.parametrize(("name", "value", "words"), [
    ("FPLUS_HTTP_HEADER_TIMEOUT", "0", "seconds above 0"),
    ("FPLUS_HTTP_IDLE_TIMEOUT", "-1", "seconds above 0"),
    ("FPLUS_HTTP_BODY_TIMEOUT", "soon", "seconds above 0"),
    ("FPLUS_HTTP_BODY_TIMEOUT", "nan", "seconds above 0"),
    ("FPLUS_HTTP_BODY_MIN_RATE", "1.5", "whole number"),
    ("FPLUS_HTTP_CONNECTIONS_PER_IP", "-3", "whole number"),
])
def test_a_bad_setting_is_one_line_naming_it(name: str, value: str, words: str) -> None:
    with pytest.raises(SystemExit) as exc:
        http_limits(100, {name: value})
    message = str(exc.value)
    assert message.startswith(f"{name}={value!r}: ") and words in message
    assert "\n" not in message


# -- bodies against the clock ---------------------------------------------------------


class Sock:
    """Records the timeouts a TimedInput sets."""

    def __init__(self) -> None:
        self.timeout: float | None = None
        self.seen: list[float | None] = []

    def gettimeout(self) -> float | None:
        return self.timeout

    def settimeout(self, value: float | None) -> None:
        self.seen.append(value)
        self.timeout = value


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


LIMITS = HttpLimits(body_timeout=30, body_min_rate=500)


def timed(data: bytes, limits: HttpLimits = LIMITS) -> tuple[TimedInput, Sock, Clock]:
    sock, clock = Sock(), Clock()
    return TimedInput(io.BytesIO(data), sock, limits, clock), sock, clock


def test_reads_return_the_body_exactly_in_bounded_steps() -> None:
    body = b"line one\nline two\n" + b"x" * 100_000
    stream, sock, _ = timed(body)
    assert stream.readline() == b"line one\n"
    assert stream.read(5) == b"line "
    assert stream.readline(100) == b"two\n"
    assert stream.read() == b"x" * 100_000
    assert stream.read(10) == b""
    assert sock.timeout is None  # restored after every read
    assert set(sock.seen) == {None, 30}


def test_the_body_must_keep_the_minimum_rate_after_the_first_timeout() -> None:
    stream, _, clock = timed(b"y" * 20_000)
    assert stream.read(10_000) == b"y" * 10_000  # at once: deadline 30 s + 20 s from now
    clock.now += 49
    assert stream.read(1) == b"y"
    clock.now += 2
    with pytest.raises(BodyTimeout) as exc:
        stream.read(1)
    assert exc.value.code == 408 and "slower than 500 bytes/s" in exc.value.description
    with pytest.raises(BodyTimeout):  # and stays failed
        stream.read(1)


def test_without_a_rate_only_the_idle_timeout_applies() -> None:
    stream, sock, clock = timed(b"z" * 10, HttpLimits(body_timeout=5, body_min_rate=0))
    clock.now += 3600
    assert stream.read() == b"z" * 10
    assert 5 in sock.seen


def test_a_read_that_times_out_is_a_408() -> None:
    class Stalled(io.RawIOBase):
        def read(self, size: int = -1) -> bytes:
            raise TimeoutError("timed out")

    stream = TimedInput(Stalled(), Sock(), LIMITS)
    with pytest.raises(BodyTimeout, match="nothing for 30 s"):
        stream.read(10)


# -- JSON at the door -----------------------------------------------------------------


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_up_to_the_limit_is_accepted() -> None:
    assert loads_checked(nested(64)) is not None
    assert loads_checked(nested(3), max_depth=3) == [[[]]]
    assert loads_checked('["[[[[", {"k": "{{{{"}]', max_depth=2) == ["[[[[", {"k": "{{{{"}]
    assert loads_checked(b"\xef\xbb\xbf{}") == {}  # a UTF-8 byte order mark is tolerated
    assert loads_checked(b'["\\ud83d\\ude00"]') == ["\U0001f600"]  # a surrogate pair is fine


@pytest.mark.parametrize(("raw", "words"), [
    (nested(65), "deeper than 64"),
    (nested(100_000), "deeper than 64"),
    ('{"a": "\\udc00"}', "lone surrogate"),
    ('{"\\ud800": 1}', "lone surrogate"),
    ("NaN", "not a JSON value"),
    ("[Infinity]", "not a JSON value"),
    ("1e999", "out of range"),
    ("1" * 5000, "too many digits"),
    ('{"a": 1'.encode("utf-16"), "UTF-8"),
    (b'"\xff"', "UTF-8"),
    ("{", "not valid JSON"),
])
def test_documents_that_would_fail_later_are_refused(raw: str | bytes, words: str) -> None:
    with pytest.raises(JSONRejected, match=words):
        loads_checked(raw)
