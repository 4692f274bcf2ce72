"""The rough edges a new operator met (issue 37), each as the real ``fplus`` shows it now:
transport failures and a wrong Config Store as one plain sentence, the Config Store port said
when assumed, ``delete --wait`` naming the edge and ``--force``, lists by name, phases in any
case, ``redeploy`` as a sentence, removing a key that is not there refused, empty stdin
refused, and kubectl's ``--from-literal KEY=VALUE``."""

from __future__ import annotations

import socket

import pytest

from fplus.config_store import uuids
from harness.stack import Stack
from tests.fplus_cli.test_journey import fplus

CLASS_NAMES = ("InvalidSchema", "MissingSchema", "SSLError", "ConnectionError",
               "NewConnectionError", "MaxRetryError", "{'error'", '{"error"')
EDGE = uuids.App.EdgeClusterStatus
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at objects of their own."""
    return shared_stack


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


def test_the_assumed_config_store_is_said(stack: Stack, home: dict[str, str]) -> None:
    """Without --config-store the guess is said, and a failure says it was a guess."""
    done = fplus(home, "login", stack.manager.url, "--password-stdin", stdin="x\n",
                 expect=None)
    assumed = stack.manager.url.rsplit(":", 1)[0] + ":8701"
    first, *rest = done.stderr.splitlines()
    assert first == (f"Config Store: assuming {assumed} (the Cluster Manager's host, port "
                     "8701); give --config-store URL if it is elsewhere"), done.stderr
    if done.returncode != 0:
        assert "it was assumed on the Cluster Manager's host, port 8701" in rest[-1], rest
