"""The README walkthrough, run as written against a real Config Store."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

from harness.servers import free_port_block, start_all_in_one, wait_until_up

README = Path(__file__).resolve().parents[1] / "README.md"


def walkthrough() -> str:
    text = README.read_text()
    block = re.search(r"<!-- walkthrough:start -->\n```sh\n(.*?)```\n<!-- walkthrough:end -->",
                      text, re.S)
    assert block, "README walkthrough markers missing"
    return block[1]


def test_readme_top_has_exactly_the_two_commands() -> None:
    first_block = re.search(r"```sh\n(.*?)```", README.read_text(), re.S)[1]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()]
    assert [c for c in commands if c] == ["make run", "make test"]


def test_walkthrough_runs(tmp_path: Path) -> None:
    """The walkthrough against ``cluster-manager up`` as ``DATA_DIR=... make run`` starts it,
    pasted into an empty directory: it finds the password through ``DATA_DIR``, and its
    scratch files go to a temporary directory, not where it was pasted."""
    port = free_port_block(3)
    data, here, tmp = tmp_path / "data", tmp_path / "here", tmp_path / "tmp"
    here.mkdir()
    tmp.mkdir()
    stack = start_all_in_one(data, port, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_up(f"http://127.0.0.1:{port}/ping", proc=stack)
        env = {k: v for k, v in os.environ.items() if k != "FPLUS_ADMIN_PASSWORD"}
        env |= {"CS": f"http://127.0.0.1:{port + 1}", "GIT_HOST": f"127.0.0.1:{port + 2}",
                "CM": f"http://127.0.0.1:{port}", "GIT_TERMINAL_PROMPT": "0",
                "DATA_DIR": str(data), "TMPDIR": str(tmp)}
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", walkthrough()],
                                cwd=here, env=env, capture_output=True, text=True,
                                timeout=120)
    finally:
        os.killpg(stack.pid, signal.SIGTERM)
        stack.wait(timeout=30)
    assert result.returncode == 0, result.stderr + result.stdout
    assert list(here.iterdir()) == []  # nothing left where it was pasted
    [work] = tmp.iterdir()  # one $WORK, holding the clone and the bootstrap script
    assert (work / "line-1/edo/cluster").is_dir() and (work / "bootstrap.sh").is_file()
    out = result.stdout
    assert '"service":"af15f175-78a0-4e05-97c0-2a0bb82b9f3b"' in out
    assert '{"mode":"auto"}' in out.replace(" ", "")  # merge-patch deleted speed
    assert re.search(r'ETag: "[0-9a-f-]{36}"', out)
    lines = out.splitlines()
    assert "422" in lines and "403" in lines
    assert "Ready {'name': 'line-1', 'namespace': 'fplus-edge'}" in lines
    assert {"self-link.yaml", "edge-sync.yaml", "sealed-secrets.yaml"} <= set(lines)
    assert "phase: Ready" in lines
    assert "#!/bin/sh" in lines and "410" in lines and "204" in lines
    assert '"keys":["password"]' in out and '"name":"db"' in out and "hunter2" not in out
    assert (data / "config-store/admin-password").stat().st_mode & 0o077 == 0
