"""CORS on every service (``--cors-origin``): preflights answered before authentication,
credentials only for listed origins, and a real browser on another origin.

The services run as real processes; the browser test serves two pages from two other
loopback ports and has headless Chromium ``fetch`` the Config Store from each.
"""

from __future__ import annotations

import argparse
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from fplus.serving.http.cors import parse_origin
from harness.browser import headless_chromium
from harness.servers import ADMIN_PASSWORD, ServiceProcess, free_port
from harness.stack import Stack, start_stack

LISTED_PORT, OTHER_PORT = free_port(), free_port()
LISTED = f"http://127.0.0.1:{LISTED_PORT}"
OTHER = f"http://127.0.0.1:{OTHER_PORT}"


@pytest.mark.parametrize(("text", "origin"), [
    ("https://admin.example.com", "https://admin.example.com"),
    ("HTTP://LOCALHOST:5173", "http://localhost:5173"),
    ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ("http://[::1]:3000", "http://[::1]:3000"),
])
def test_origins_are_exact(text: str, origin: str) -> None:
    assert parse_origin(text) == origin


@pytest.mark.parametrize("text", [
    "*", "https://*.example.com", "https://admin.example.com/", "https://a.example.com/app",
    "admin.example.com", "ftp://example.com", "https://example.com:99999x",
    "https://ex$ample.com", "https://exa mple.com",
])
def test_anything_else_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="is not an origin"):
        parse_origin(text)


def test_the_command_line_refuses_a_bad_origin_in_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "fplus.config_store.cli", "serve", "--data-dir",
                           str(tmp_path), "--port", str(free_port()), "--cors-origin", "*"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "'*' is not an origin" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = start_stack(tmp_path_factory.mktemp("cors"), extra=("--cors-origin", LISTED))
    yield running
    running.stop()


def _services(stack: Stack) -> dict[str, str]:
    return {"Config Store": f"{stack.store.url}/v2/whoami",
            "Git server": f"{stack.git.url}/uuid/{'0' * 8}-0000-4000-8000-{'0' * 12}/info/refs"
                          "?service=git-upload-pack",
            "Cluster Manager": f"{stack.manager.url}/v1/cluster"}


def _preflight(url: str, origin: str) -> requests.Response:
    return requests.options(url, timeout=10, headers={
        "Origin": origin, "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "authorization"})


@pytest.mark.parametrize("service", ["Config Store", "Git server", "Cluster Manager"])
def test_preflight_is_answered_before_authentication(stack: Stack, service: str) -> None:
    url = _services(stack)[service]
    listed = _preflight(url, LISTED)
    assert listed.status_code == 204, listed.text  # no credentials, and still no 401
    assert listed.headers["Access-Control-Allow-Origin"] == LISTED
    assert listed.headers["Access-Control-Allow-Credentials"] == "true"
    assert "authorization" in listed.headers["Access-Control-Allow-Headers"].lower()
    assert "Origin" in listed.headers.get("Vary", "")
    other = _preflight(url, OTHER)
    assert "Access-Control-Allow-Origin" not in other.headers
    assert "Access-Control-Allow-Credentials" not in other.headers


def test_answers_carry_cors_headers_only_for_listed_origins(stack: Stack) -> None:
    url = f"{stack.store.url}/v2/whoami"
    auth = ("admin", ADMIN_PASSWORD)
    ok = requests.get(url, auth=auth, headers={"Origin": LISTED}, timeout=10)
    assert ok.status_code == 200
    assert ok.headers["Access-Control-Allow-Origin"] == LISTED
    assert "ETag" in ok.headers["Access-Control-Expose-Headers"]
    refused = requests.get(url, headers={"Origin": LISTED}, timeout=10)
    assert refused.status_code == 401  # the browser may show the app why
    assert refused.headers["Access-Control-Allow-Origin"] == LISTED
    for headers in ({"Origin": OTHER}, {}):
        plain = requests.get(url, auth=auth, headers=headers, timeout=10)
        assert plain.status_code == 200
        assert not any(h.lower().startswith("access-control-") for h in plain.headers)


def test_without_origins_no_service_answers_cors(tmp_path: Path) -> None:
    store = ServiceProcess(tmp_path / "cs").start()
    try:
        r = _preflight(f"{store.url}/v2/whoami", LISTED)
        assert r.status_code == 401 and "Access-Control-Allow-Origin" not in r.headers
    finally:
        store.stop()


class _Page(http.server.BaseHTTPRequestHandler):
    """Serves one empty page: the origin a script runs in."""

    def do_GET(self) -> None:
        body = b"<!doctype html><title>app</title>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def pages() -> Iterator[None]:
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", port), _Page)
               for port in (LISTED_PORT, OTHER_PORT)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield
    for server in servers:
        server.shutdown()
        server.server_close()


FETCH = """
const done = arguments[arguments.length - 1];
fetch(arguments[0], {credentials: "include", headers: {Authorization: arguments[1]}})
  .then(r => r.json().then(body => done({status: r.status, uuid: body.uuid || null})))
  .catch(e => done({error: String(e)}));
"""


def test_a_browser_app_on_a_listed_origin_may_call_and_another_may_not(
        stack: Stack, pages: None, tmp_path: Path) -> None:
    import base64
    basic = "Basic " + base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()
    with headless_chromium(tmp_path) as browser:
        browser.set_script_timeout(20)
        browser.get(f"{LISTED}/app")
        ok = browser.execute_async_script(FETCH, f"{stack.store.url}/v2/whoami", basic)
        assert ok["status"] == 200 and ok["uuid"], ok
        browser.get(f"{OTHER}/app")
        blocked = browser.execute_async_script(FETCH, f"{stack.store.url}/v2/whoami", basic)
        assert "Failed to fetch" in blocked.get("error", ""), blocked
