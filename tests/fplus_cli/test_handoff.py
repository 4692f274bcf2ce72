"""The edge hand-off cannot fail silently (issue 37): ``fplus`` says the server's warnings,
a used, expired or unknown bootstrap URL makes the printed ``curl … | sh`` fail with the server's
reason, the script a real Cluster Manager serves checks its Git server and Config Store
first, and with a private CA the printed command pins it (real curl and sh throughout)."""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from fplus.bootstrap.command import bootstrap_command, quoted
from harness.servers import ADMIN_PASSWORD, Api, free_port_block
from harness.stack import Stack, create_cluster, start_stack, status, wait_for
from tests.bootstrap.edge import script_files
from tests.fplus_cli.test_journey import fplus
from tests.test_up_tls import _wait_up

LOOPBACK = "fplus: warning: the bootstrap URL names a loopback address"
PLAIN = "fplus: warning: the bootstrap URL is plain HTTP"
SH = shutil.which("sh") or "/bin/sh"


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at clusters of their own."""
    return shared_stack


def _env(home: dict[str, str], stack: Stack) -> dict[str, str]:
    return home | {"FPLUS_URL": stack.manager.url, "FPLUS_USER": "admin",
                   "FPLUS_PASSWORD": ADMIN_PASSWORD, "CONFIG_STORE_URL": stack.store.url}


def _ready(env: dict[str, str], name: str) -> str:
    return str(json.loads(fplus(env, "cluster", "create", name, "--wait", "-o", "json")
                          .stdout)["uuid"])


def _sh(command: str, cwd: Path, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    """``command`` as an operator pastes it into a POSIX sh (no pipefail)."""
    return subprocess.run([SH, "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


# ------------------------------------------------------------------------------ warnings

def test_bootstrap_says_the_servers_warnings_once_each(stack: Stack, home: dict[str, str],
                                                       tmp_path: Path) -> None:
    env = _env(home, stack)
    _ready(env, "handoff-warn")
    done = fplus(env, "cluster", "bootstrap", "handoff-warn")
    lines = done.stderr.splitlines()
    assert [line for line in lines if line.startswith(LOOPBACK)] == [
        LOOPBACK + ": only this machine can use it; start the Cluster Manager with "
        "--external-url (up: --advertise) naming an address edges reach"]
    assert [line for line in lines if line.startswith(PLAIN)] == [
        PLAIN + ": the script and the credentials in it cross the network unencrypted; serve "
        "HTTPS (--tls-cert/--tls-key, up: --tls) and give an https --external-url"]
    assert done.stdout.startswith("curl ")  # the command itself stays alone on stdout
    fetched = fplus(env, "cluster", "bootstrap", "handoff-warn", "--script",
                    str(tmp_path / "s.sh")).stderr
    assert fetched.count(LOOPBACK) == 1 and fetched.count(PLAIN) == 1


@pytest.fixture
def warning_server() -> Iterator[str]:
    """A stand-in Cluster Manager whose every answer carries the same two warnings (one
    with a comma and an escaped quote in its text), on two pages."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            page = ({"clusters": [], "next": "x"} if "after" not in self.path
                    else {"clusters": []})
            body = json.dumps(page).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Warning", '199 cm "first, with a comma and a \\"quote\\""')
            self.send_header("Warning", '299 - "second" "Wed, 21 Oct 2026 07:28:00 GMT"')
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_every_command_says_each_distinct_warning_once(warning_server: str,
                                                       home: dict[str, str]) -> None:
    done = fplus(home | {"FPLUS_URL": warning_server, "FPLUS_TOKEN": "t"},
                 "cluster", "list", "-o", "json")
    assert done.stderr.splitlines() == ['fplus: warning: first, with a comma and a "quote"',
                                        "fplus: warning: second"]


# ------------------------------------------------------------------------------ refusals

def test_a_used_url_makes_the_printed_command_fail_with_the_reason(
        stack: Stack, home: dict[str, str], tmp_path: Path) -> None:
    env = _env(home, stack)
    cluster = _ready(env, "handoff-used")
    command = fplus(env, "cluster", "bootstrap", "handoff-used").stdout.strip()
    url = command.split("'")[1]
    first = requests.get(url, timeout=30)  # the edge's first run used it
    assert first.status_code == 200 and first.text.startswith("#!/bin/sh")

    again = _sh(command, tmp_path)
    assert again.returncode == 1, (again.stdout, again.stderr)
    assert again.stderr == ("bootstrap refused (HTTP 410): this bootstrap URL has been used "
                            "already; ask for a new one\n")
    assert again.stdout == ""
    # the API's status and JSON stay for clients that ask for JSON
    refused = requests.get(url, headers={"Accept": "application/json"}, timeout=30)
    assert refused.status_code == 410 and "used already" in refused.json()["error"]
    assert requests.get(url, timeout=30).status_code == 410
    # an unknown token says so the same way
    wrong = _sh(f"curl -sS '{stack.manager.url}/v1/cluster/{cluster}/bootstrap?token=x' | sh",
                tmp_path)
    assert (wrong.returncode, wrong.stderr) == (
        1, "bootstrap refused (HTTP 401): unknown or superseded bootstrap token\n")
    plain = requests.get(f"{stack.manager.url}/v1/cluster/{cluster}/bootstrap?token=x",
                         timeout=30)  # the API's status and headers, a script for a body
    assert plain.status_code == 401 and plain.headers["WWW-Authenticate"]
    assert plain.headers["Content-Type"].startswith("text/plain")
    assert plain.headers["Cache-Control"] == "no-store"
    # fplus itself still gets the server's sentence
    fetch = fplus(env, "cluster", "bootstrap", "handoff-used", "--script",
                  str(tmp_path / "s.sh"))
    assert fetch.returncode == 0


def test_an_expired_url_makes_curl_sh_fail_with_the_reason(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    short = start_stack(tmp_path_factory.mktemp("handoff-ttl"),
                        manager_extra=("--bootstrap-token-ttl", "1"))
    try:
        cluster = create_cluster(short.admin, "handoff-expired")
        wait_for(lambda: (status(short.admin, cluster) or {}).get("ready"), 60, "ready")
        url = Api(short.manager.url, ("admin", ADMIN_PASSWORD)).post(
            f"/v1/cluster/{cluster}/bootstrap-url").json()
        wait_for(lambda: requests.head(url, timeout=10).status_code == 410, 30, "expiry")
        run = _sh(f"curl -sS '{url}' | sh", tmp_path)
    finally:
        short.stop()
    assert (run.returncode, run.stderr) == (
        1, "bootstrap refused (HTTP 410): this bootstrap URL has expired; ask for a new one\n")


def test_the_served_script_checks_its_git_server_and_config_store(
        stack: Stack, home: dict[str, str], tmp_path: Path) -> None:
    env = _env(home, stack)
    _ready(env, "handoff-reach")
    fplus(env, "cluster", "bootstrap", "handoff-reach", "--script", str(tmp_path / "s.sh"))
    files = script_files((tmp_path / "s.sh").read_text(), tmp_path / "files")
    body = files["bootstrap.sh"]
    assert f"REACH_GIT='{stack.git.url}/ping'" in body
    assert f"REACH_CONFIG_STORE='{stack.store.url}/ping'" in body
    assert "REACH_REGISTRIES='https://github.com/fluxcd/flux2/releases/download/" in body
    assert "https://ghcr.io/v2/" in body
    assert Api(stack.git.url).get("/ping").status_code == 200  # what the script asks


# ------------------------------------------------------------------------------ private CA

@pytest.fixture(scope="module")
def tls_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """``cluster-manager up --tls``: (Cluster Manager URL, Config Store URL, CA file)."""
    data = tmp_path_factory.mktemp("handoff-tls") / "data"
    port = free_port_block(3)
    env = {k: v for k, v in os.environ.items() if k != "FPLUS_ADMIN_PASSWORD"}
    up = subprocess.Popen(
        [sys.executable, "-m", "fplus.cluster_manager.cli", "up", "--data-dir", str(data),
         "--port", str(port), "--tls"],
        env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True)
    ca = data / "tls" / "ca.crt"
    cm = f"https://127.0.0.1:{port}"
    try:
        _wait_up(f"{cm}/ping", ca, up)
        yield cm, f"https://127.0.0.1:{port + 1}", ca
    finally:
        with contextlib.suppress(ProcessLookupError):  # already exited: _wait_up said why
            os.killpg(up.pid, signal.SIGTERM)
        up.communicate(timeout=30)


def _edge_path(root: Path) -> str:
    """A PATH with what an edge has to fetch and check (no kubectl: the script stops at once
    after it started, changing nothing)."""
    tools = root / "tools"
    tools.mkdir()
    for tool in ("curl", "sha256sum", "sh", "mktemp", "rm", "cat"):
        found = shutil.which(tool)
        assert found, tool
        (tools / tool).symlink_to(found)
    return str(tools)


def test_a_private_ca_is_pinned_by_the_printed_command(
        tls_stack: tuple[str, str, Path], home: dict[str, str], tmp_path: Path) -> None:
    cm, cs, ca = tls_stack
    password = (ca.parent.parent / "config-store" / "admin-password").read_text().strip()
    env = home | {"FPLUS_URL": cm, "FPLUS_USER": "admin", "FPLUS_PASSWORD": password,
                  "CONFIG_STORE_URL": cs, "FPLUS_CA_FILE": str(ca)}
    _ready(env, "handoff-tls")
    digest = hashlib.sha256(ca.read_bytes()).hexdigest()
    done = fplus(env, "cluster", "bootstrap", "handoff-tls")
    command = done.stdout.strip()
    assert command.startswith(f"curl -ksS -o fplus-ca.crt '{cm}/v1/edge-ca' && echo "
                              f"'{digest}  fplus-ca.crt' | sha256sum -c - && curl -sS "
                              f"--cacert fplus-ca.crt '{cm}/v1/cluster/"), command
    assert PLAIN not in done.stderr and LOOPBACK in done.stderr

    # an edge without the CA: a tampered digest stops before the URL is used
    edge = tmp_path / "edge"
    edge.mkdir()
    edge_env = {"PATH": _edge_path(tmp_path), "HOME": str(edge)}
    url = command.rsplit("'", 2)[1]
    tampered = _sh(command.replace(digest, "0" * 64), edge, edge_env)
    assert tampered.returncode == 1 and "FAILED" in tampered.stdout + tampered.stderr
    assert requests.head(url, verify=str(ca), timeout=30).status_code == 200  # still unused

    # the command as printed: the CA checked, the script fetched over it and run
    run = _sh(command, edge, edge_env)
    assert "fplus-ca.crt: OK" in run.stdout
    assert run.returncode == 1 and "bootstrap: kubectl not found on PATH" in run.stderr, run
    assert (edge / "fplus-ca.crt").read_bytes() == ca.read_bytes()
    assert requests.head(url, verify=str(ca), timeout=30).status_code == 410  # it was used
    # without the CA, the same URL is not even fetched
    assert _sh(f"curl -sS '{url}' | sh", edge, edge_env).stderr.startswith("curl: (60)")


def test_the_printed_command_quotes_the_urls_for_sh() -> None:
    """One command for the CLI and the console (``fplus.bootstrap.command``): a URL with a
    quote in it reaches curl as it was, and the pinned form names the CA's digest."""
    url, ca_url = "https://cm.example/v1/cluster/x/bootstrap?token=a'b", "https://cm/v1/edge-ca"
    words = subprocess.run(["sh", "-c", "printf '%s\\n' " + quoted(url)], capture_output=True,
                           text=True, check=True).stdout
    assert words == url + "\n"
    assert bootstrap_command(url, ca_url, None) == f"curl -sS {quoted(url)} | sh"
    pinned = bootstrap_command(url, ca_url, b"ca")
    assert hashlib.sha256(b"ca").hexdigest() in pinned and "--cacert fplus-ca.crt" in pinned
