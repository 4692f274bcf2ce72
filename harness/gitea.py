"""A real Gitea on loopback: the pinned release (``make edge-tools``), SQLite, in a temp dir.

:func:`start_gitea` writes an ``app.ini`` of ours (offline, no mailer, no SSH, no
registration, ``INSTALL_LOCK``, ``ROOT_URL`` on 127.0.0.1), migrates the database, makes an
admin user and an API token with Gitea's own CLI (``gitea admin user create --admin``,
``gitea admin user generate-access-token``), then runs ``gitea web`` in its own process
group. The binary is built without the ``bindata`` tag (its web front-end needs npm), so
templates, locales and ``public/`` are read from the pinned module's source
(``STATIC_ROOT_PATH``; without them ``gitea web`` exits: "translation is missing for task
update_mirrors"). The front-end bundle is not built, so pages render unstyled; the REST
API and Git over HTTP, what we use, are complete.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

import requests

from harness import edgetools
from harness.realedge.processes import HostProcess
from harness.servers import free_port

ADMIN = "fplus-admin"
ADMIN_PASSWORD = "gitea-admin-password"  # noqa: S105  (the throwaway server's admin)


@dataclass
class Gitea:
    """A running Gitea: its URL, admin account and token (scopes ``all``)."""

    root: Path
    port: int
    token: str
    process: HostProcess
    admin: str = ADMIN
    password: str = ADMIN_PASSWORD

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(self, token: str | None = None) -> requests.Session:
        """A session for ``/api/v1``, sending ``token`` (default: the admin's)."""
        session = requests.Session()
        session.headers["Authorization"] = f"token {token or self.token}"
        return session

    def clone_url(self, owner: str, repo: str, user: str | None = None,
                  secret: str | None = None) -> str:
        """A Git-over-HTTP URL with credentials (default: the admin and its token)."""
        return (f"http://{user or self.admin}:{secret or self.token}"
                f"@127.0.0.1:{self.port}/{owner}/{repo}.git")

    def cli(self, *args: str) -> str:
        """``gitea <args>`` against this server's config; its stdout (raises on failure)."""
        return gitea_cli(self.root, *args)

    def stop(self) -> None:
        self.process.stop()


def config_path(root: Path) -> Path:
    return root / "custom" / "conf" / "app.ini"


def app_ini(root: Path, port: int, keys: tuple[str, str]) -> str:
    """Our configuration: SQLite under ``root``, loopback only, nothing sent anywhere;
    ``keys`` are the secret key and the internal token (kept when the port changes)."""
    data = root / "data"
    static_root = edgetools.component("gitea").source
    root_user = "I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true\n" if os.getuid() == 0 else ""
    return f"""\
APP_NAME = fplus test Gitea
RUN_MODE = prod
WORK_PATH = {root}
{root_user}
[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = {port}
DOMAIN = 127.0.0.1
ROOT_URL = http://127.0.0.1:{port}/
APP_DATA_PATH = {data}
STATIC_ROOT_PATH = {static_root}
OFFLINE_MODE = true
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false

[database]
DB_TYPE = sqlite3
PATH = {data}/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = {root}/repositories

[security]
INSTALL_LOCK = true
SECRET_KEY = {keys[0]}
INTERNAL_TOKEN = {keys[1]}

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false
ENABLE_NOTIFY_MAIL = false

[mailer]
ENABLED = false

[oauth2]
ENABLED = false

[actions]
ENABLED = false

[cron]
ENABLED = false

[cache]
ADAPTER = memory

[session]
PROVIDER = memory

[queue]
TYPE = channel

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[log]
MODE = console
LEVEL = warn
ROOT_PATH = {root}/log
"""


def gitea_cli(root: Path, *args: str, timeout: float = 120) -> str:
    """Run the pinned ``gitea`` with ``root``'s config; its stdout, or raise with stderr."""
    done = subprocess.run([str(edgetools.binary("gitea")), "--config", str(config_path(root)),
                           "--work-path", str(root), *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"gitea {' '.join(args[:3])} failed ({done.returncode}):\n"
                           f"{done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def prepare(root: Path) -> str:
    """Migrate the database and make the admin; return the admin's token."""
    gitea_cli(root, "migrate")
    gitea_cli(root, "admin", "user", "create", "--username", ADMIN, "--password",
              ADMIN_PASSWORD, "--email", f"{ADMIN}@example.invalid", "--admin",
              "--must-change-password=false")
    return token_in(gitea_cli(root, "admin", "user", "generate-access-token", "--username",
                              ADMIN, "--token-name", "fplus-tests", "--scopes", "all", "--raw"))


def token_in(out: str) -> str:
    """The access token ``generate-access-token --raw`` printed: its last 40-hex word (as
    root Gitea logs a warning to stdout first, and a loaded machine's slow-query warning can
    come after it)."""
    found = re.findall(r"\b[0-9a-f]{40}\b", out)
    if not found:
        raise RuntimeError(f"gitea printed no access token: {out!r}")
    return str(found[-1])


def answers(url: str) -> bool:
    return requests.get(f"{url}/api/v1/version", timeout=2).ok


def serve(root: Path, port: int, log: Path, timeout: float) -> HostProcess:
    """``gitea web`` in its own process group, once its API answers on ``port``."""
    process = HostProcess("gitea", [str(edgetools.binary("gitea")), "web", "--config",
                                    str(config_path(root)), "--work-path", str(root)],
                          log).start()
    try:
        return process.wait_ready(lambda: answers(f"http://127.0.0.1:{port}"), timeout)
    except BaseException:
        process.stop()
        raise


def start_gitea(root: Path, timeout: float = 60.0, attempts: int = 3) -> Gitea:
    """Set up and start Gitea under ``root`` on a free loopback port (stopped on failure;
    on another port if one was taken between choosing and binding it)."""
    config, keys = config_path(root), (secrets.token_hex(32), secrets.token_hex(48))
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(app_ini(root, free_port(), keys))
    token = prepare(root)
    for attempt in range(1, attempts + 1):
        port, log = free_port(), root / f"gitea-{attempt}.log"
        config.write_text(app_ini(root, port, keys))
        try:
            return Gitea(root, port, token, serve(root, port, log, timeout))
        except RuntimeError:
            if attempt == attempts or "address already in use" not in log.read_text():
                raise
    raise AssertionError("unreachable")
