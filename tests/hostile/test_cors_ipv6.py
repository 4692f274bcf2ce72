"""An IPv6 CORS origin is an exact string, not a pattern.

flask-cors reads ``[``/``]`` in ``--cors-origin http://[::1]:5173`` as a regex character class:
the real origin never matched while ``http://1:5173`` did. A Config Store started with it must
answer CORS for that origin and for no other.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from harness.servers import ADMIN_PASSWORD, ServiceProcess

IPV6 = "http://[::1]:5173"
LOOKALIKES = ["http://1:5173", "http://::1:5173", "http://:5173", "http://[::1]:51730",
              "http://[::1]:5173.evil.example", "http://[::2]:5173"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    root: Path = tmp_path_factory.mktemp("cors-ipv6")
    server = ServiceProcess(root / "cs", extra_args=("--cors-origin", IPV6,
                                                     "--cors-origin", "http://localhost:5173"))
    server.start()
    yield server
    server.stop()


def _get(store: ServiceProcess, origin: str) -> requests.Response:
    return requests.get(f"{store.url}/v2/whoami", auth=("admin", ADMIN_PASSWORD), timeout=10,
                        headers={"Origin": origin})


def _preflight(store: ServiceProcess, origin: str) -> requests.Response:
    return requests.options(f"{store.url}/v2/whoami", timeout=10, headers={
        "Origin": origin, "Access-Control-Request-Method": "GET"})


def test_the_ipv6_origin_itself_is_answered(store: ServiceProcess) -> None:
    for answer in (_get(store, IPV6), _preflight(store, IPV6)):
        assert answer.status_code in (200, 204)
        assert answer.headers.get("Access-Control-Allow-Origin") == IPV6
        assert answer.headers.get("Access-Control-Allow-Credentials") == "true"


@pytest.mark.parametrize("origin", LOOKALIKES)
def test_what_the_brackets_would_match_as_a_pattern_is_not(store: ServiceProcess,
                                                           origin: str) -> None:
    for answer in (_get(store, origin), _preflight(store, origin)):
        assert not any(h.lower().startswith("access-control-") for h in answer.headers), \
            (origin, dict(answer.headers))


def test_a_plain_origin_is_exact_too(store: ServiceProcess) -> None:
    assert _get(store, "http://localhost:5173").headers.get(
        "Access-Control-Allow-Origin") == "http://localhost:5173"
    assert "Access-Control-Allow-Origin" not in _get(store, "http://localhost:51730").headers
