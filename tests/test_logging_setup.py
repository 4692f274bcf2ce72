"""``fplus.serving.configure_logging``: ``LOG_LEVEL`` names the level; a wrong one is one
clear line."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fplus.serving.startup.logs import Throttle, log_level


@pytest.mark.parametrize(("value", "level"), [
    (None, logging.INFO), ("", logging.INFO), ("DEBUG", logging.DEBUG),
    ("debug", logging.DEBUG), (" warning ", logging.WARNING), ("ERROR", logging.ERROR),
    ("CRITICAL", logging.CRITICAL),
])
def test_log_level_names(value: str | None, level: int) -> None:
    assert log_level(value) == level


@pytest.mark.parametrize("value", ["verbose", "10", "INFO,DEBUG"])
def test_unknown_log_level_is_a_clear_exit(value: str) -> None:
    with pytest.raises(SystemExit) as exc:
        log_level(value)
    message = str(exc.value.code)
    assert message.startswith(f"LOG_LEVEL={value!r} ")
    assert "DEBUG, INFO, WARNING, ERROR, CRITICAL" in message


def run(code_or_module: list[str], log_level: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, LOG_LEVEL=log_level)
    return subprocess.run([sys.executable, *code_or_module], env=env, capture_output=True,
                          text=True, timeout=60, cwd=Path(__file__).parent.parent)


def test_configure_logging_sets_the_level_and_format() -> None:
    code = ("import logging; from fplus.serving import configure_logging; configure_logging(); "
            "print(logging.getLogger().level); logging.getLogger('probe').debug('hello')")
    done = run(["-c", code], "debug")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(logging.DEBUG)
    assert done.stderr.rstrip().endswith(" DEBUG probe: hello")


@pytest.mark.parametrize("module", ["fplus.config_store.cli", "fplus.git_server.cli"])
def test_commands_refuse_a_bad_log_level_in_one_line(module: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = run(["-m", module, "serve", "--data-dir", str(data), "--port", "1"], "chatty")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "LOG_LEVEL='chatty' is not a log level; use one of DEBUG, INFO, WARNING, ERROR, "
        "CRITICAL"]
    assert not data.exists()  # refused before anything was started or written


def test_a_throttle_writes_one_line_per_key_per_window_counting_the_rest() -> None:
    now = [100.0]
    throttle = Throttle(every=60.0, clock=lambda: now[0])
    assert throttle.allow("refused") == 0
    assert [throttle.allow("refused") for _ in range(5)] == [None] * 5
    assert throttle.allow("other") == 0  # keys are throttled apart
    now[0] += 59.9
    assert throttle.allow("refused") is None
    now[0] += 0.1
    assert throttle.allow("refused") == 6  # the next line counts those held back
    assert throttle.allow("refused") is None
