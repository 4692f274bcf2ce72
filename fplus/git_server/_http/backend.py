"""Running ``git http-backend`` as a CGI program, streaming both ways.

Every push is checked by git itself: :data:`GIT_CONFIG` turns on ``receive.fsckObjects``, so
``git receive-pack`` refuses a pack holding a fsck-bad object (a tree entry named ``.git`` or
``..``, a malformed commit or tag, …) and updates no ref; the push fails with git's reason.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from fplus.serving import BodyTimeout

log = logging.getLogger(__name__)
CHUNK = 64 * 1024


def _exec_path() -> str:
    return subprocess.run(["git", "--exec-path"], capture_output=True, text=True,
                          check=True).stdout.strip()


_BACKEND: list[str] = []
GIT_CONFIG: tuple[tuple[str, str], ...] = (("receive.fsckObjects", "true"),)
"""Configuration given to every http-backend run (through ``GIT_CONFIG_COUNT``/``_KEY_n``/
``_VALUE_n``, so it holds for every repo, whatever its own config says)."""


def backend_command() -> list[str]:
    """The ``git http-backend`` executable (found once)."""
    if not _BACKEND:
        _BACKEND.append(os.path.join(_exec_path(), "git-http-backend"))
    return _BACKEND


def _config_env(config: tuple[tuple[str, str], ...] = GIT_CONFIG) -> dict[str, str]:
    """``config`` as git's ``GIT_CONFIG_*`` environment variables."""
    env = {"GIT_CONFIG_COUNT": str(len(config))}
    for index, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{index}"], env[f"GIT_CONFIG_VALUE_{index}"] = key, value
    return env


def _pump(source: IO[bytes], proc: subprocess.Popen) -> None:
    """Feed the request body to http-backend. A client that stalls (the body read timeout)
    ends the backend too: http-backend waits forever for input cut short of its length."""
    sink = proc.stdin
    assert sink is not None
    try:
        while chunk := source.read(CHUNK):
            sink.write(chunk)
    except BodyTimeout as exc:
        log.info("push body stalled; stopping http-backend: %s", exc.description)
        proc.kill()
    except OSError as exc:  # the backend stopped reading (it refused the request)
        log.debug("http-backend stopped reading its input: %s", exc)
    finally:
        with contextlib.suppress(OSError):
            sink.close()


def run_backend(project_root: Path, path_info: str, environ: dict,
                user: str) -> tuple[int, list[tuple[str, str]], Iterator[bytes]]:
    """Run http-backend for one request; returns ``(status, headers, body chunks)``."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_PROJECT_ROOT": str(project_root),
        "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": path_info,
        "REMOTE_USER": user,
        "REMOTE_ADDR": environ.get("REMOTE_ADDR", ""),
        "REQUEST_METHOD": environ["REQUEST_METHOD"],
        "QUERY_STRING": environ.get("QUERY_STRING", ""),
        "CONTENT_TYPE": environ.get("CONTENT_TYPE", ""),
        "GATEWAY_INTERFACE": "CGI/1.1",
        **_config_env(),
    }
    for cgi, key in (("CONTENT_LENGTH", "CONTENT_LENGTH"),
                     ("HTTP_CONTENT_ENCODING", "HTTP_CONTENT_ENCODING"),
                     ("GIT_PROTOCOL", "HTTP_GIT_PROTOCOL")):
        if environ.get(key):
            env[cgi] = environ[key]
    proc = subprocess.Popen(backend_command(), env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    feeder = threading.Thread(target=_pump, args=(environ["wsgi.input"], proc), daemon=True)
    feeder.start()
    status, headers, rest = _read_cgi_headers(proc.stdout)
    return status, headers, _stream(proc, rest, feeder)


def _read_cgi_headers(stdout: IO[bytes]) -> tuple[int, list[tuple[str, str]], bytes]:
    buf = b""
    while b"\r\n\r\n" not in buf and b"\n\n" not in buf:
        chunk = stdout.read1(CHUNK) if hasattr(stdout, "read1") else stdout.read(CHUNK)
        if not chunk:
            break
        buf += chunk
    sep = b"\r\n\r\n" if b"\r\n\r\n" in buf else b"\n\n"
    head, _, rest = buf.partition(sep)
    status, headers = 200, []
    for line in head.decode("latin-1").splitlines():
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = int(value.strip().split()[0])
        elif name:
            headers.append((name.strip(), value.strip()))
    if not head:
        status = 502
    return status, headers, rest


def _stream(proc: subprocess.Popen, first: bytes, feeder: threading.Thread) -> Iterator[bytes]:
    try:
        if first:
            yield first
        assert proc.stdout is not None
        # typeshed's IO lacks read1; the pipe is buffered (io's, or gevent's when patched)
        while chunk := proc.stdout.read1(CHUNK):  # type: ignore[attr-defined]
            yield chunk
    finally:
        proc.stdout.close()  # type: ignore[union-attr]
        if proc.poll() is None:
            proc.wait(timeout=30)
        feeder.join(timeout=5)
