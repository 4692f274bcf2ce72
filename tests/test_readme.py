"""The README walkthrough, run as written against a real Config Store."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.servers import ConfigStoreProcess

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
    # as `make run` lays it out: .data/config-store with a generated admin password
    server = ConfigStoreProcess(tmp_path / ".data" / "config-store", admin_password=None).start()
    try:
        env = dict(os.environ, CS=server.url)
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", walkthrough()], cwd=tmp_path,
                                env=env, capture_output=True, text=True, timeout=60)
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr + result.stdout
    out = result.stdout
    assert '"service":"af15f175-78a0-4e05-97c0-2a0bb82b9f3b"' in out
    assert '{"mode":"auto"}' in out.replace(" ", "")  # merge-patch deleted speed
    assert re.search(r'ETag: "[0-9a-f-]{36}"', out)
    lines = out.splitlines()
    assert "422" in lines and lines[-1] == "403"
    assert (tmp_path / ".data/config-store/admin-password").stat().st_mode & 0o077 == 0
