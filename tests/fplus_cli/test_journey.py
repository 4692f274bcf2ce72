"""The real ``fplus`` command (its console script, in a child process) against a real stack:
login → create --wait → list → get → bootstrap → seal → secret list → delete --wait, JSON
and YAML output parsed, and the error exits: unknown cluster, wrong password, usage, not
logged in, an oversized secret refused before upload."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import requests
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.config_store import uuids
from harness.certs import make_cert
from harness.servers import ADMIN_PASSWORD
from harness.stack import Stack
from tests.cluster_manager.escrow.conftest import fingerprint

FPLUS = str(Path(sys.executable).parent / "fplus")


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at objects of their own."""
    return shared_stack


def fplus(env: dict[str, str], *args: str, stdin: str | None = None,
          expect: int | None = 0) -> subprocess.CompletedProcess[str]:
    """Run ``fplus``; its exit status must be ``expect`` (None: any)."""
    done = subprocess.run([FPLUS, *args], env=env, input=stdin, capture_output=True,
                          text=True, timeout=120, check=False)
    assert expect is None or done.returncode == expect, (args, done.returncode, done.stdout,
                                                         done.stderr)
    return done


def login(stack: Stack, env: dict[str, str]) -> None:
    fplus(env, "login", stack.manager.url, "--config-store", stack.store.url,
          "--password-stdin", stdin=ADMIN_PASSWORD + "\n")


def test_the_whole_journey(stack: Stack, home: dict[str, str], tmp_path: Path) -> None:
    login(stack, home)
    saved = tmp_path / "config" / "fplus" / "config.json"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert ADMIN_PASSWORD not in saved.read_text()
    assert json.loads(saved.read_text())["token"]
    assert json.loads(fplus(home, "whoami", "-o", "json").stdout)["name"] == "admin"

    created = json.loads(fplus(home, "cluster", "create", "cli-edge", "--wait",
                               "-o", "json").stdout)
    assert created["phase"] == "Ready" and created["ready"] is True
    assert created["spec"]["name"] == "cli-edge"
    cluster = created["uuid"]
    listed = json.loads(fplus(home, "cluster", "list", "-o", "json").stdout)
    [mine] = [c for c in listed if c["name"] == "cli-edge"]
    assert mine["uuid"] == cluster and mine["phase"] == "Ready"
    table = fplus(home, "cluster", "list").stdout
    assert "cli-edge" in table and "Ready" in table and "NAME" in table
    by_name = yaml.safe_load(fplus(home, "cluster", "get", "cli-edge", "-o", "yaml").stdout)
    by_uuid = json.loads(fplus(home, "cluster", "get", cluster, "-o", "json").stdout)
    assert by_name == by_uuid and by_name["uuid"] == cluster and by_name["phase"] == "Ready"
    assert json.loads(fplus(home, "cluster", "wait", "cli-edge", "-o", "json")
                      .stdout)["ready"] is True

    line = fplus(home, "cluster", "bootstrap", "cli-edge").stdout.strip()
    assert line.startswith(f"curl -sS '{stack.manager.url}/") and line.endswith("' | sh")
    script = requests.get(line.split("'")[1], timeout=10)
    assert script.status_code == 200 and script.text.startswith("#!/bin/sh")
    out = tmp_path / "bootstrap.sh"
    fplus(home, "cluster", "bootstrap", "cli-edge", "--script", str(out))
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert subprocess.run(["sh", "-n", str(out)], check=False).returncode == 0

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    r = stack.admin.patch(f"/v2/app/{uuids.App.EdgeClusterStatus}/object/{cluster}",
                          json={"kubeseal_cert": make_cert(key)},
                          headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 204, r.text  # as Edge Sync reports the sealing certificate
    fplus(home, "secret", "seal", "cli-edge", "fplus-edge/db", "password",
          "--from-literal", "hunter2")
    fplus(home, "secret", "seal", "cli-edge", "fplus-edge/db", "user", stdin="app")
    value = tmp_path / "token.txt"
    value.write_text("t0ken")
    fplus(home, "secret", "seal", cluster, "fplus-edge/api", "token", "--from-file",
          str(value), "--scope", "namespace-wide")
    fplus(home, "secret", "seal", "cli-edge", "fplus-edge/dry", "k", "--from-literal", "v",
          "--dry-run")
    secrets = json.loads(fplus(home, "secret", "list", "cli-edge", "-o", "json").stdout)
    assert {(s["name"], tuple(sorted(s["keys"])), s["scope"]) for s in secrets} == {
        ("db", ("password", "user"), "strict"), ("api", ("token",), "namespace-wide")}
    assert "hunter2" not in json.dumps(secrets)
    fplus(home, "secret", "delete", "cli-edge", "fplus-edge/db", "user")
    secrets = json.loads(fplus(home, "secret", "list", "cli-edge", "-o", "json").stdout)
    assert {s["name"]: s["keys"] for s in secrets}["db"] == ["password"]

    fplus(home, "cluster", "delete", "cli-edge", "--force", "--wait", "--timeout", "60")
    assert "cli-edge" not in [c["name"] for c in json.loads(
        fplus(home, "cluster", "list", "-o", "json").stdout)]


def test_errors_are_one_line_and_exit_1(stack: Stack, home: dict[str, str],
                                        tmp_path: Path) -> None:
    no_login = fplus(home, "cluster", "list", expect=1)
    assert no_login.stderr.startswith("fplus: not logged in") and no_login.stdout == ""
    wrong = fplus(home, "login", stack.manager.url, "--config-store", stack.store.url,
                  "--password-stdin", stdin="nope\n", expect=1)
    assert wrong.stderr.strip() == f"fplus: wrong username or password for {stack.store.url}"
    assert not (tmp_path / "config" / "fplus" / "config.json").exists()
    login(stack, home)
    unknown = fplus(home, "cluster", "get", "no-such-edge", expect=1)
    assert unknown.stderr.strip() == ("fplus: no cluster named no-such-edge: `fplus cluster list` "
                                     "shows what there is")
    refused = fplus(home, "cluster", "create", "Bad_Name", expect=1)
    assert refused.stderr.startswith("fplus: ") and len(refused.stderr.splitlines()) == 1
    big = tmp_path / "big"
    big.write_bytes(b"x" * (1024 * 1024 + 1))
    over = fplus(home, "secret", "seal", "no-such-edge", "ns/n", "k", "--from-file", str(big),
                 expect=1)
    assert "over 1048576 bytes: not sent" in over.stderr  # refused before any request
    usage = fplus(home, "cluster", "create", expect=2)
    assert "Missing argument 'NAME'" in usage.stderr
    assert fplus(home, "secret", "seal", "x", "not-a-ref", "k", "--from-literal", "v",
                 expect=2).stderr.count("NAMESPACE/NAME") == 1


def test_environment_credentials_need_no_login(stack: Stack, home: dict[str, str]) -> None:
    env = home | {"FPLUS_URL": stack.manager.url, "FPLUS_USER": "admin",
                  "FPLUS_PASSWORD": ADMIN_PASSWORD, "CONFIG_STORE_URL": stack.store.url}
    assert json.loads(fplus(env, "whoami", "-o", "json").stdout)["name"] == "admin"
    assert isinstance(json.loads(fplus(env, "cluster", "list", "-o", "json").stdout), list)


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_scripts(home: dict[str, str], shell: str) -> None:
    script = fplus(home, "completion", shell).stdout
    assert "_FPLUS_COMPLETE" in script
    done = subprocess.run([FPLUS], env=home | {"_FPLUS_COMPLETE": f"{shell}_complete",
                                               "COMP_WORDS": "fplus clu", "COMP_CWORD": "1"},
                          capture_output=True, text=True, timeout=60, check=False)
    assert "cluster" in done.stdout


def test_approve_key_pins_the_key_waiting_for_approval(stack: Stack,
                                                       home: dict[str, str]) -> None:
    login(stack, home)
    cluster = json.loads(fplus(home, "cluster", "create", "key-edge", "--wait",
                               "-o", "json").stdout)["uuid"]
    first, renewed = (rsa.generate_private_key(public_exponent=65537, key_size=2048)
                      for _ in range(2))
    for key in (first, renewed):  # as Edge Sync reports a certificate, then a new one
        r = stack.admin.patch(f"/v2/app/{uuids.App.EdgeClusterStatus}/object/{cluster}",
                              json={"kubeseal_cert": make_cert(key)},
                              headers={"Content-Type": "application/merge-patch+json"})
        assert r.status_code == 204, r.text
        status = json.loads(fplus(home, "cluster", "get", "key-edge", "-o", "json").stdout)
    assert status["sealingKey"]["fingerprint"] == fingerprint(first)
    assert status["pendingKey"]["fingerprint"] == fingerprint(renewed)

    wrong = fplus(home, "cluster", "approve-key", "key-edge", fingerprint(first), expect=1)
    assert wrong.stderr.startswith("fplus: the sealing key waiting for approval is "
                                   f"{fingerprint(renewed)}, not {fingerprint(first)}")
    done = fplus(home, "cluster", "approve-key", "key-edge", fingerprint(renewed))
    assert json.loads(done.stdout)["sealingKey"]["fingerprint"] == fingerprint(renewed)
    assert "approved" in done.stderr
    status = json.loads(fplus(home, "cluster", "get", cluster, "-o", "json").stdout)
    assert status["sealingKey"]["fingerprint"] == fingerprint(renewed)
    assert "pendingKey" not in status
    again = fplus(home, "cluster", "approve-key", cluster, fingerprint(renewed), expect=1)
    assert "no sealing key" in again.stderr and "waits for approval" in again.stderr
