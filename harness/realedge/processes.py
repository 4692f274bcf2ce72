"""Host processes of the edge: each in its own process group, logged to a file, stopped by PID."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class HostProcess:
    """One binary run in its own process group with its output in ``log``."""

    name: str
    argv: Sequence[str]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> HostProcess:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(list(self.argv), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         env={**os.environ, **self.env})
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 20) -> str:
        """The end of its log, for error messages."""
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def wait_ready(self, ready: Callable[[], bool], timeout: float = 60.0) -> HostProcess:
        """Poll ``ready`` until true; fail with the log's tail if the process exits first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise RuntimeError(f"{self.name} exited before it was ready:\n{self.tail()}")
            with contextlib.suppress(Exception):
                if ready():
                    return self
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} was not ready within {timeout:.0f} s:\n{self.tail()}")

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM to the group, SIGKILL after ``grace`` seconds, then reap."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=grace)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.proc = None


def stop_all(processes: Sequence[HostProcess], grace: float = 5.0) -> None:
    """Stop several at once: SIGTERM to all, then wait for each (SIGKILL after ``grace``)."""
    for p in processes:
        if p.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.proc.pid, signal.SIGTERM)
    for p in processes:
        p.stop(grace)
