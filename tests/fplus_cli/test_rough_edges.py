"""The rough edges a new operator met (issue 37), each as the real ``fplus`` shows it now:
transport failures and a wrong Config Store as one plain sentence, the Config Store port said
when assumed, ``delete --wait`` naming the edge and ``--force``, lists by name, phases in any
case, ``redeploy`` as a sentence, removing a key that is not there refused, empty stdin
refused, and kubectl's ``--from-literal KEY=VALUE``."""

from __future__ import annotations

import http.server
import json
import os
import socket
import threading
import uuid
from typing import Any

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.config_store import uuids
from harness.certs import make_cert
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.fleet.conftest import fleet_chart
from tests.fplus_cli.test_journey import fplus, login

CLASS_NAMES = ("InvalidSchema", "MissingSchema", "SSLError", "ConnectionError",
               "NewConnectionError", "MaxRetryError", "{'error'", '{"error"')
EDGE = uuids.App.EdgeClusterStatus
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at objects of their own."""
    return shared_stack


def root(stack: Stack) -> Api:
    return Api(stack.manager.url, ("admin", ADMIN_PASSWORD))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _one_sentence(stderr: str) -> str:
    line = stderr.strip()
    assert len(line.splitlines()) == 1 and line.startswith("fplus: "), stderr
    assert not any(name in line for name in CLASS_NAMES), line
    return line[len("fplus: "):]


def test_transport_failures_are_one_plain_sentence(stack: Stack,
                                                   home: dict[str, str]) -> None:
    creds = home | {"FPLUS_TOKEN": "t"}
    closed = f"http://127.0.0.1:{_closed_port()}"
    said = _one_sentence(fplus(creds | {"FPLUS_URL": "htp://127.0.0.1:1"}, "cluster", "list",
                               expect=1).stderr)
    assert said == ("cannot reach the Cluster Manager at htp://127.0.0.1:1: that is not an "
                    "http:// or https:// URL; check the URL given to `fplus login` (or "
                    "FPLUS_URL)")
    said = _one_sentence(fplus(creds | {"FPLUS_URL": closed}, "cluster", "list",
                               expect=1).stderr)
    assert said == (f"cannot reach the Cluster Manager at {closed}: nothing answered there "
                    "(the connection was refused or dropped); check that the Cluster Manager "
                    "runs there and the URL given to `fplus login` (or FPLUS_URL)")
    tls = stack.manager.url.replace("http://", "https://")
    said = _one_sentence(fplus(home, "login", tls, "--password-stdin", stdin="x\n",
                               expect=1).stderr)
    assert said.startswith(f"cannot reach the Cluster Manager at {tls}: the TLS handshake "
                           "failed") and "--ca-file" in said, said


def test_a_wrong_config_store_is_named(
        stack: Stack, home: dict[str, str]) -> None:
    done = fplus(home, "login", stack.manager.url, "--config-store", stack.manager.url,
                 "--password-stdin", stdin="x\n", expect=1)
    assert _one_sentence(done.stderr) == (
        f"{stack.manager.url} is not the Config Store (it is the Cluster Manager); check "
        "--config-store (or CONFIG_STORE_URL)")
    closed = f"http://127.0.0.1:{_closed_port()}"
    done = fplus(home, "login", stack.manager.url, "--config-store", closed,
                 "--password-stdin", stdin="x\n", expect=1)
    assert _one_sentence(done.stderr).startswith(f"cannot reach the Config Store at {closed}: "
                                                 "nothing answered there")


def test_login_finds_the_config_store_the_cluster_manager_names(
        stack: Stack, home: dict[str, str]) -> None:
    """Without --config-store, login takes the Config Store the Cluster Manager's /ping
    names, says so, and the saved session works against it."""
    assert requests.get(f"{stack.manager.url}/ping", timeout=10).json()["configStore"] == \
        stack.store.url
    done = fplus(home, "login", stack.manager.url, "--password-stdin",
                 stdin=ADMIN_PASSWORD + "\n")
    assert done.stderr.splitlines()[0] == (f"Config Store: {stack.store.url} (as the Cluster "
                                           "Manager names it)"), done.stderr
    assert "admin" in fplus(home, "whoami").stdout


class _SilentManager(http.server.BaseHTTPRequestHandler):
    """A Cluster Manager's /ping that names no Config Store (an older version)."""

    def do_GET(self) -> None:
        body = json.dumps({"service": uuids.Service.Clusters}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_an_assumed_config_store_is_said(home: dict[str, str]) -> None:
    """When the Cluster Manager names none, the guess is said, and a failure says it was a
    guess."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SilentManager)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        done = fplus(home, "login", url, "--password-stdin", stdin="x\n", expect=1)
    finally:
        server.shutdown()
        server.server_close()
    first, *rest = done.stderr.splitlines()
    assert first == ("Config Store: assuming http://127.0.0.1:8701 (the Cluster Manager's "
                     "host, port 8701); give --config-store URL if it is elsewhere"), done.stderr
    assert "it was assumed on the Cluster Manager's host, port 8701" in rest[-1], rest


def test_delete_wait_names_the_edge_and_force(stack: Stack, home: dict[str, str]) -> None:
    login(stack, home)
    name = f"cli-del-{uuid.uuid4().hex[:6]}"
    cluster = json.loads(fplus(home, "cluster", "create", name, "--wait", "-o", "json")
                         .stdout)["uuid"]
    r = stack.admin.patch(f"/v2/app/{EDGE}/object/{cluster}", json={"hosts": []},
                          headers=MERGE)
    assert r.status_code == 204, r.text  # an edge that reported once, and never applies
    done = fplus(home, "cluster", "delete", name, "--wait", "--timeout", "1", expect=1)
    assert done.stderr.splitlines() == [
        f"{name}: Deleting: waiting for its edge to apply the teardown",
        f"fplus: {name} is still there after 1 s: its teardown waits for the edge to apply "
        "it (or for the Cluster Manager's --teardown-timeout); wait longer with --timeout, "
        "or delete it with --force to stop waiting for the edge"]
    fplus(home, "cluster", "delete", cluster, "--force", "--wait", "--timeout", "60")


@pytest.fixture(scope="module")
def tagged(stack: Stack) -> tuple[str, list[str]]:
    """A label value and the names of five clusters carrying it (created out of order)."""
    tag = uuid.uuid4().hex[:8]
    names = [f"{p}-{tag}" for p in ("echo", "alpha", "delta", "charlie", "bravo")]
    for name in names:
        create_cluster(stack.admin, name, labels={"sortcheck": tag})
    return tag, names


def test_lists_are_sorted_by_name(stack: Stack, home: dict[str, str],
                                  tagged: tuple[str, list[str]]) -> None:
    login(stack, home)
    tag, names = tagged
    listed = json.loads(fplus(home, "cluster", "list", "-l", f"sortcheck={tag}", "-o", "json")
                        .stdout)
    assert [c["name"] for c in listed] == sorted(names)
    quiet = fplus(home, "cluster", "list", "-l", f"sortcheck={tag}", "-q").stdout.split()
    assert quiet == [c["uuid"] for c in listed]
    for name in names:
        r = root(stack).post("/v1/fleet-deployment", json={
            "name": name, "chart": fleet_chart(stack),
            "selector": {"matchLabels": {"sortcheck": tag}}})
        assert r.status_code == 201, r.text
    fleets = json.loads(fplus(home, "fleet", "list", "-o", "json").stdout)
    assert [f["name"] for f in fleets if f["name"].endswith(tag)] == sorted(names)


def test_phases_are_taken_in_any_case(stack: Stack, home: dict[str, str],
                                      tagged: tuple[str, list[str]]) -> None:
    login(stack, home)
    tag, names = tagged

    def ready() -> list[dict[str, Any]] | None:
        found = json.loads(fplus(home, "cluster", "list", "-l", f"sortcheck={tag}", "--phase",
                                 "rEaDy", "-o", "json").stdout)
        return found if len(found) == len(names) else None
    assert {c["name"] for c in wait_for(ready, timeout=120, what="the clusters Ready")} == \
        set(names)
    assert json.loads(fplus(home, "cluster", "list", "-l", f"sortcheck={tag}", "--phase",
                            "failed", "-o", "json").stdout) == []
    refused = fplus(home, "cluster", "list", "--phase", "sideways", expect=1).stderr
    assert "phase must be one of" in refused


@pytest.fixture(scope="module")
def sealable(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Ready cluster whose edge reported its sealing certificate; its name."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FPLUS_") and k != "CONFIG_STORE_URL"}
    env["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("sealable"))
    login(stack, env)
    name = f"cli-sec-{uuid.uuid4().hex[:6]}"
    cluster = json.loads(fplus(env, "cluster", "create", name, "--wait", "-o", "json")
                         .stdout)["uuid"]
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    r = stack.admin.patch(f"/v2/app/{EDGE}/object/{cluster}",
                          json={"kubeseal_cert": make_cert(key)}, headers=MERGE)
    assert r.status_code == 204, r.text
    return name


def _keys(home: dict[str, str], name: str) -> dict[str, list[str]]:
    listed = json.loads(fplus(home, "secret", "list", name, "-o", "json").stdout)
    return {s["name"]: sorted(s["keys"]) for s in listed}


def test_kubectl_from_literal_pairs(stack: Stack, home: dict[str, str], sealable: str) -> None:
    login(stack, home)
    done = fplus(home, "secret", "seal", sealable, "fplus-edge/kv", "--from-literal",
                 "user=app", "--from-literal", "dsn=host=db port=5432")
    assert done.stderr.splitlines() == ["sealed fplus-edge/kv user", "sealed fplus-edge/kv dsn"]
    assert _keys(home, sealable)["kv"] == ["dsn", "user"]
    usage = fplus(home, "secret", "seal", sealable, "fplus-edge/kv", "--from-literal",
                  "novalue", expect=2).stderr
    assert "without KEY it takes KEY=VALUE" in usage
    fplus(home, "secret", "seal", sealable, "fplus-edge/kv", "--from-literal", "a=1",
          "--from-literal", "a=2", expect=2)
    assert _keys(home, sealable)["kv"] == ["dsn", "user"]


def test_empty_stdin_seals_nothing(stack: Stack, home: dict[str, str], sealable: str) -> None:
    login(stack, home)
    before = _keys(home, sealable)
    empty = fplus(home, "secret", "seal", sealable, "fplus-edge/empty", "password", stdin="",
                  expect=1)
    assert _one_sentence(empty.stderr) == (
        "standard input was empty: nothing sealed (pipe the value in, or give --from-literal "
        "or --from-file)")
    assert _keys(home, sealable) == before and "empty" not in before


def test_removing_an_absent_key_is_refused(stack: Stack, home: dict[str, str],
                                           sealable: str) -> None:
    login(stack, home)
    fplus(home, "secret", "seal", sealable, "fplus-edge/db", "user", stdin="app")
    before = _keys(home, sealable)
    absent = fplus(home, "secret", "delete", sealable, "fplus-edge/db", "password", expect=1)
    assert _one_sentence(absent.stderr) == (
        f"fplus-edge/db on {sealable} has no key password: nothing removed (`fplus secret "
        f"list {sealable}` shows what is)")
    absent = fplus(home, "secret", "delete", sealable, "fplus-edge/none", "k", expect=1)
    assert _one_sentence(absent.stderr).startswith(
        f"fplus-edge/none on {sealable} is not sealed there: nothing removed")
    assert _keys(home, sealable) == before
    done = fplus(home, "secret", "delete", sealable, "fplus-edge/db", "user")
    assert done.stderr.strip() == "removed fplus-edge/db user"
    assert "db" not in _keys(home, sealable)


def test_redeploy_says_what_it_did(stack: Stack, home: dict[str, str]) -> None:
    login(stack, home)
    name = f"cli-re-{uuid.uuid4().hex[:6]}"
    cluster = json.loads(fplus(home, "cluster", "create", name, "-o", "json").stdout)["uuid"]
    said = fplus(home, "cluster", "redeploy", name).stdout.strip()
    assert said.startswith(f"{name}: redeploy requested at ") and said.endswith(
        ": the Cluster Manager commits its repo again from its entries"), said
    answer = json.loads(fplus(home, "cluster", "redeploy", name, "-o", "json").stdout)
    assert answer["uuid"] == cluster and answer["requested"]
