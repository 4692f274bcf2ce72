"""A real PostgreSQL for tests and benchmarks: a throwaway server, or an existing one.

``PostgresServer`` runs ``initdb`` and ``postgres`` from PATH or the newest
``/usr/lib/postgresql/*/bin`` in a fresh temporary directory, as a non-root user, on a free
loopback port; ``ExternalPostgres`` uses a server named by a URL (``FPLUS_TEST_POSTGRES``)
where we may create databases. Both hand out fresh databases as
``postgresql://user:password@host:port/db`` URLs.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

import psycopg
from psycopg import sql

from harness.servers import children, free_port

ENV_URL = "FPLUS_TEST_POSTGRES"
SUPERUSER = "fplus"


def find_bin_dir() -> Path | None:
    """The directory holding ``initdb`` and ``postgres``: PATH first, else the newest
    ``/usr/lib/postgresql/<version>/bin``; None when there is none."""
    initdb, postgres = shutil.which("initdb"), shutil.which("postgres")
    if initdb and postgres and Path(initdb).parent == Path(postgres).parent:
        return Path(initdb).parent
    versions = [p for p in Path("/usr/lib/postgresql").glob("*/bin")
                if (p / "initdb").is_file() and (p / "postgres").is_file()]
    versions.sort(key=lambda p: [int(n) for n in re.findall(r"\d+", p.parent.name)] or [0])
    return versions[-1] if versions else None


def _run_as() -> pwd.struct_passwd | None:
    """The user to run the server as: ``postgres`` (else ``nobody``) when we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise RuntimeError("running as root and neither a postgres nor a nobody user exists")


def database_url(server_url: str, dbname: str) -> str:
    """``server_url`` with its database replaced by ``dbname``."""
    parts = urllib.parse.urlsplit(server_url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + dbname))


class _Databases:
    """Fresh databases on a server reached through ``admin_url`` (a superuser or CREATEDB)."""

    admin_url: str

    def __init__(self) -> None:
        self.created: list[str] = []

    def create_database(self, name: str | None = None) -> str:
        """Create a database (a random name unless given) and return its URL."""
        name = name or f"t_{secrets.token_hex(6)}"
        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        self.created.append(name)
        return database_url(self.admin_url, name)

    def drop_databases(self) -> None:
        """Drop every database made here (their connections are ended first)."""
        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=10) as conn:
            for name in self.created:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                             .format(sql.Identifier(name)))
        self.created.clear()


class ExternalPostgres(_Databases):
    """An existing server (``FPLUS_TEST_POSTGRES``) where we may create databases."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.admin_url = url
        self.pid: int | None = None

    def start(self) -> ExternalPostgres:
        """Check the server answers."""
        with psycopg.connect(self.admin_url, connect_timeout=10):
            return self

    def stop(self) -> None:
        """Drop the databases made here; the server itself is not ours to stop."""
        self.drop_databases()


class PostgresServer(_Databases):
    """A throwaway PostgreSQL in a fresh temporary directory, as a non-root user.

    ``fsync=False`` trades durability for speed (tests); benchmarks keep the default.
    ``settings``: more server settings (``-c name=value``), e.g. ``shared_preload_libraries``.
    """

    def __init__(self, *, fsync: bool = True, max_connections: int = 300,
                 bin_dir: Path | None = None, port: int | None = None,
                 settings: dict[str, str] | None = None) -> None:
        super().__init__()
        found = bin_dir or find_bin_dir()
        if found is None:
            raise RuntimeError("no PostgreSQL binaries (initdb, postgres) on PATH "
                               "or in /usr/lib/postgresql/*/bin")
        self.bin_dir = found
        self.fsync = fsync
        self.max_connections = max_connections
        self.settings = dict(settings or {})
        self.port = port or free_port()
        self.password = secrets.token_urlsafe(16)
        self.user = _run_as()
        self.root: Path | None = None
        self.proc: subprocess.Popen | None = None

    @property
    def admin_url(self) -> str:  # type: ignore[override]
        return f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/postgres"

    @property
    def pid(self) -> int | None:
        """The postmaster's PID while it runs."""
        return self.proc.pid if self.proc and self.proc.poll() is None else None

    @property
    def log_path(self) -> Path | None:
        return self.root / "postgres.log" if self.root else None

    def _as_user(self) -> dict:
        if self.user is None:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": [],
                "env": {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8",
                        "HOME": str(self.root)}}

    def _initdb(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="fplus-pg-"))
        (self.root / "sock").mkdir()
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self.user is not None:
            for path in (self.root, self.root / "sock", pwfile):
                os.chown(path, self.user.pw_uid, self.user.pw_gid)
        done = subprocess.run(
            [str(self.bin_dir / "initdb"), "-D", str(self.root / "data"), "-U", SUPERUSER,
             f"--pwfile={pwfile}", "--auth-local=trust", "--auth-host=scram-sha-256",
             "-E", "UTF8", "--locale=C", "--no-sync"],
            capture_output=True, text=True, timeout=120, **self._as_user())
        pwfile.unlink()
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr.strip() or done.stdout.strip()}")

    def start(self, timeout: float = 60.0) -> PostgresServer:
        """Initialise (first time only), start and wait until a real connection succeeds."""
        if self.root is None:
            self._initdb()
        assert self.root is not None
        args = [str(self.bin_dir / "postgres"), "-D", str(self.root / "data"),
                "-p", str(self.port), "-k", str(self.root / "sock"),
                "-c", "listen_addresses=127.0.0.1",
                "-c", f"max_connections={self.max_connections}",
                "-c", f"fsync={'on' if self.fsync else 'off'}"]
        if not self.fsync:
            args += ["-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        for name, value in self.settings.items():
            args += ["-c", f"{name}={value}"]
        with open(self.root / "postgres.log", "ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         **self._as_user())
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.proc.returncode}; "
                                   f"log: {self._log_tail()}")
            try:
                with psycopg.connect(self.admin_url, connect_timeout=2):
                    return self
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("postgres did not accept connections") from None
                time.sleep(0.05)

    def _log_tail(self) -> str:
        log = self.log_path
        return log.read_text(errors="replace")[-2000:] if log and log.exists() else ""

    def stop(self, *, keep_data: bool = False, timeout: float = 15.0) -> None:
        """Fast shutdown (SIGINT: backends are ended, clients cut off), SIGKILL to the server
        and its backends after ``timeout``; the temporary directory goes too unless
        ``keep_data`` (to start again)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
                self.proc.wait(timeout=timeout)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                self.kill()
            self.proc = None
        if not keep_data and self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
            self.created.clear()

    def kill(self) -> None:
        """SIGKILL the server and its backends (each in a session of its own), as a crash
        would; the data stays for a restart."""
        if self.proc is None:
            return
        backends = children(self.proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for pid in backends:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc = None


def server_for_tests() -> PostgresServer | ExternalPostgres | None:
    """The server tests use: ``FPLUS_TEST_POSTGRES`` when set, else a throwaway one without
    fsync when the binaries exist, else None. Not started yet."""
    url = os.environ.get(ENV_URL)
    if url:
        return ExternalPostgres(url)
    if find_bin_dir() is None:
        return None
    return PostgresServer(fsync=False)
