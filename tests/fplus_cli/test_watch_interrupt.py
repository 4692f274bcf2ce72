"""Ctrl-C ends ``fplus cluster list --watch`` within a second or two whatever it is doing:
blocked reading the Cluster Manager's answer, waiting for the notify WebSocket's handshake,
reconnecting after the Config Store went away, or idle between changes. Each case runs a
real ``fplus`` against the session's stack, with a silent listener or a TCP relay (killed to
lose the connection) standing in for a service, and sends SIGINT at that moment."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import pytest

from harness.stack import Stack, wait_for
from tests.fplus_cli.test_journey import FPLUS, login
from tests.fplus_cli.test_watch import Snapshots

PROMPT = 2.0
"""Seconds the watch may take to end after SIGINT."""


class Listener:
    """A port on 127.0.0.1 that accepts connections and either never answers (``target``
    None) or relays them to ``target``; :meth:`kill` drops the port and every connection."""

    def __init__(self, target: tuple[str, int] | None = None) -> None:
        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.seen = b""
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.server.accept()
                self._keep(conn)
                if self.target is None:
                    threading.Thread(target=self._swallow, args=(conn,), daemon=True).start()
                else:
                    upstream = socket.create_connection(self.target)
                    self._keep(upstream)
                    for a, b in ((conn, upstream), (upstream, conn)):
                        threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _saw(self, data: bytes) -> None:
        with self._lock:
            self.seen += data

    def _keep(self, conn: socket.socket) -> None:
        with self._lock:
            self._open.append(conn)

    def _swallow(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := conn.recv(65536):
                self._saw(data)

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                self._saw(data)
                sink.sendall(data)

    def kill(self) -> None:
        self.server.close()
        with self._lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()


@pytest.fixture
def env(shared_stack: Stack, home: dict[str, str]) -> dict[str, str]:
    login(shared_stack, home)
    return home


@contextlib.contextmanager
def watching(env: dict[str, str], **urls: str) -> Iterator[subprocess.Popen[str]]:
    """``fplus cluster list --watch -o json`` with ``urls`` overriding the profile's."""
    proc = subprocess.Popen([FPLUS, "cluster", "list", "--watch", "-o", "json", "--interval",
                             "600"], env=env | urls, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def interrupt(proc: subprocess.Popen[str]) -> None:
    """SIGINT, then the process must be gone within :data:`PROMPT` seconds, cleanly."""
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=PROMPT)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running {PROMPT} s after SIGINT") from None
    took = time.monotonic() - started
    _, err = proc.communicate()
    assert proc.returncode == 0 and "Traceback" not in err, (proc.returncode, err)
    assert took < PROMPT


def arrived(listener: Listener, marker: bytes) -> Callable[[], bool]:
    return lambda: marker in listener.seen


def test_while_reading_the_cluster_managers_answer(shared_stack: Stack,
                                                   env: dict[str, str]) -> None:
    silent = Listener()
    with watching(env, FPLUS_URL=silent.url) as proc:
        wait_for(arrived(silent, b"GET /v1/cluster"), what="the list asked")
        interrupt(proc)
    silent.kill()


def test_while_the_notify_handshake_hangs(shared_stack: Stack, env: dict[str, str]) -> None:
    silent = Listener()
    with watching(env, CONFIG_STORE_URL=silent.url) as proc:
        wait_for(arrived(silent, b"GET /notify/v2"), what="the WebSocket asked for")
        interrupt(proc)
    silent.kill()


@pytest.mark.parametrize("moment", [0.0, 0.3, 1.0, 2.5])
def test_while_reconnecting_after_the_config_store_went_away(
        shared_stack: Stack, env: dict[str, str], moment: float) -> None:
    store = urlsplit(shared_stack.store.url)
    relay = Listener((store.hostname or "127.0.0.1", store.port or 80))
    with watching(env, CONFIG_STORE_URL=relay.url) as proc:
        Snapshots(proc).until(lambda _rows: True)
        wait_for(arrived(relay, b"GET /notify/v2"), what="the WebSocket connected")
        relay.kill()  # the notify thread now reconnects, every 2-3 s, and is refused
        time.sleep(moment)  # the moment is what this test varies
        interrupt(proc)


def test_while_idle_between_changes(shared_stack: Stack, env: dict[str, str]) -> None:
    with watching(env) as proc:
        Snapshots(proc).until(lambda _rows: True)
        interrupt(proc)
