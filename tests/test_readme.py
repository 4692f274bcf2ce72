"""The README walkthrough and the Config Store tour of docs/api.md, run as written against a
real stack."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from harness.servers import free_port_block, start_all_in_one, wait_until_up

README = Path(__file__).resolve().parents[1] / "README.md"
API_DOC = README.parent / "docs" / "api.md"  # the Config Store tour


def walkthrough(marker: str = "walkthrough", doc: Path = README) -> str:
    """The shell block between ``doc``'s ``<!-- marker:start/end -->`` lines."""
    text = doc.read_text()
    block = re.search(rf"<!-- {marker}:start -->\n```sh\n(.*?)```\n<!-- {marker}:end -->",
                      text, re.S)
    assert block, f"{doc.name} {marker} markers missing"
    return block[1]


def walkthrough_env(root: Path, **values: str) -> dict[str, str]:
    """The caller's environment as a newcomer's shell would have it: no ``FPLUS_*``
    settings, ``fplus`` on PATH (as ``.venv/bin`` is after ``make run``), its session saved
    under ``root`` instead of the real ``~/.config``; plus ``values``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FPLUS_") and k != "CONFIG_STORE_URL"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env | {"XDG_CONFIG_HOME": str(root / "config-home"), "GIT_TERMINAL_PROMPT": "0",
                  "NO_COLOR": "1"} | values


def test_readme_top_has_exactly_the_two_commands() -> None:
    first_block = re.search(r"```sh\n(.*?)```", README.read_text(), re.S)[1]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()]
    assert [c for c in commands if c] == ["make run", "make test"]


def test_walkthrough_runs(tmp_path: Path) -> None:
    """The README walkthrough and docs/api.md's Config Store tour against ``cluster-manager up`` as
    ``DATA_DIR=... PORT=... make run`` starts it on a port other than the default, pasted into
    an empty directory: they find every service from ``PORT`` and the password through
    ``DATA_DIR``, and scratch files go to a temporary directory, not where
    they were pasted."""
    port = free_port_block(3)
    data, here, tmp = tmp_path / "data", tmp_path / "here", tmp_path / "tmp"
    here.mkdir()
    tmp.mkdir()
    stack = start_all_in_one(data, port, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert port != 8700  # a non-default PORT: the walkthrough finds every service from it
    env = walkthrough_env(tmp_path, PORT=str(port), DATA_DIR=str(data), TMPDIR=str(tmp))
    try:
        wait_until_up(f"http://127.0.0.1:{port}/ping", proc=stack)
        result, tour = (subprocess.run(["bash", "-euo", "pipefail", "-c", walkthrough(*block)],
                                       cwd=here, env=env, capture_output=True, text=True,
                                       timeout=180)
                        for block in (("walkthrough", README), ("api-tour", API_DOC)))
    finally:
        os.killpg(stack.pid, signal.SIGTERM)
        stack.wait(timeout=30)
    assert result.returncode == 0, result.stderr + result.stdout
    assert tour.returncode == 0, tour.stderr + tour.stdout
    assert list(here.iterdir()) == []  # nothing left where it was pasted
    [work] = tmp.iterdir()  # one $WORK, holding the clone and the bootstrap script
    assert (work / "line-1/edo/cluster").is_dir() and (work / "bootstrap.sh").is_file()
    assert (tmp_path / "config-home/fplus/config.json").stat().st_mode & 0o077 == 0

    lines = result.stdout.splitlines()
    assert {"self-link.yaml", "helm-charts.yaml", "edge-sync.yaml", "sealed-secrets.yaml",
            "sealed-secrets-upstream.yaml"} <= set(lines)
    assert re.search(r"^line-1\s+Ready\s+Unknown\s+-\s+0\s*$",
                     result.stdout, re.M), result.stdout  # fplus cluster list
    [command] = [line for line in lines if line.startswith("curl -sS ")]
    assert command.endswith("| sh") and f"127.0.0.1:{port}/v1/cluster/" in command
    assert "fplus: warning: the bootstrap URL names a loopback address" in result.stderr
    assert "#!/bin/sh" in lines
    assert re.search(r"^fplus-edge\s+db\s+strict\s+password\s+unknown\s+password\s+- *$",
                     result.stdout, re.M), \
        result.stdout  # fplus secret list
    assert "hunter2" not in result.stdout + result.stderr
    assert "line-1: Online" in result.stderr  # fplus cluster wait --for online

    out = tour.stdout
    assert '"service":"af15f175-78a0-4e05-97c0-2a0bb82b9f3b"' in out
    assert '{"mode":"auto"}' in out.replace(" ", "")  # merge-patch deleted speed
    assert re.search(r'ETag: "[0-9a-f-]{36}"', out)
    assert "422" in out.splitlines() and "403" in out.splitlines()
    assert (data / "config-store/admin-password").stat().st_mode & 0o077 == 0
