"""A newcomer's first steps print nothing alarming: ``make run``'s editable install of the
project (a fresh virtualenv, pip upgraded as the Makefile does) gives no build warning, and
the README's Performance section speaks plainly and sends the reader to the benchmarks."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_an_editable_install_prints_no_build_warning(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    subprocess.run([*pip, "install", "-q", "--upgrade", "pip"], check=True, timeout=300)
    done = subprocess.run([*pip, "install", "-q", "--no-deps", "-e", str(ROOT)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr and "!!" not in done.stderr, done.stderr


def test_the_performance_section_speaks_plainly() -> None:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Performance\n", 1)[1].split("\n## ", 1)[0]
    assert "(docs/benchmarks.md" in section
    assert not re.search(r"\b[Ii]ssue \d+", section), "an issue number the reader cannot see"
    assert "| no |" not in section
