"""How a central service's ``serve`` logs in to the Config Store: as its own principal.

``FPLUS_PASSWORD_FILE`` (user ``FPLUS_USER``, default the service's principal); or
``FPLUS_USER=<its principal>`` with ``FPLUS_PASSWORD``; else the password file its ``seed``
step wrote into the data dir. Other credentials in ``FPLUS_USER`` / ``FPLUS_PASSWORD`` are
taken for an administrator's, as before ``seed`` existed: ``serve`` seeds with them first
(they are then dropped from ``os.environ``, so no child process inherits them, though they stay
in this process's initial ``/proc/<pid>/environ``) and says so once it serves.

Seeding never replaces the password of the service's principal when it exists (``seed
--rotate-password`` does); a running service whose login is refused all the same says so
loudly, once a minute, and reads its password file again at every login
(:class:`ServiceCredentials`), so a rotated password reaches it without a restart.
"""

from __future__ import annotations

import argparse
import logging
import os
import threading
import time
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import NamedTuple

log = logging.getLogger(__name__)


class Login(NamedTuple):
    """How ``serve`` logs in; ``seeded_as`` names the administrator it seeded as, if any."""

    user: str
    file: Path | None
    password: str
    seeded_as: str | None = None


def service_login(prog: str, own: str, password_file: Path, seed: Callable[[], Path],
                  env: MutableMapping[str, str] = os.environ) -> Login:
    """The login of service ``prog`` whose principal is ``own`` (see the module docstring);
    ``seed`` seeds as the administrator in ``env`` and returns the password file it wrote.
    Anything missing or unreadable is one line and exit."""
    seeded_as = None
    password = env.get("FPLUS_PASSWORD") or env.get("FPLUS_ADMIN_PASSWORD")
    user = env.get("FPLUS_USER") or "admin"
    if env.get("FPLUS_PASSWORD_FILE"):
        user, path = env.get("FPLUS_USER") or own, Path(env["FPLUS_PASSWORD_FILE"])
    elif password and user == own:
        return Login(user, None, password)
    elif password:
        path = seed()
        for name in ("FPLUS_PASSWORD", "FPLUS_ADMIN_PASSWORD"):  # for no child process
            env.pop(name, None)
        seeded_as, user = user, own
    else:
        user, path = own, password_file
        if not path.is_file():
            raise SystemExit(f"{prog}: no Config Store credentials: run `{prog} seed` first "
                             f"(with administrator credentials; it writes {path}), or set "
                             "FPLUS_PASSWORD_FILE, or FPLUS_USER and FPLUS_PASSWORD")
    try:
        password = path.read_text().strip()
    except OSError as exc:
        raise SystemExit(f"{prog}: the password file {path} cannot be read "
                         f"({exc.strerror or exc})") from None
    if not password:
        raise SystemExit(f"{prog}: the password file {path} is empty")
    return Login(user, path, password, seeded_as)


def warn_if_seeded(login: Login, prog: str) -> None:
    """Say that ``serve`` seeded as an administrator (once it serves: start-up failures
    stay one line)."""
    if login.seeded_as is not None:
        log.warning("seeded the Config Store with the administrator credentials of FPLUS_USER "
                    "(%s); run `%s seed` once instead and start `serve` without them, so the "
                    "administrator password stays out of this service", login.seeded_as, prog)


def refused_at_start(prog: str, url: str, login: Login) -> str:
    """The one line ``serve`` exits with when the Config Store refuses its login."""
    return (f"{prog}: {url} refused {login.user} with the password from "
            f"{login.file or 'FPLUS_PASSWORD'}: run `{prog} seed --rotate-password` with this "
            "data dir (seeding never replaces an existing principal's password otherwise)")


def add_rotate_option(parser: argparse.ArgumentParser, principal: str) -> None:
    """``seed --rotate-password``."""
    parser.add_argument(
        "--rotate-password", action="store_true",
        help=f"give {principal} a new password, written to the password file in --data-dir "
             "(without it, an existing principal keeps its password)")


REFUSED_EVERY_S = 60.0
"""How often a refused login is logged again while it stays refused."""


class ServiceCredentials:
    """The credentials of a service's Config Store client (its ``credentials`` provider and
    ``login_refused`` hook): the password file, read again at every login; a refused login
    logged at ERROR, at most once per :data:`REFUSED_EVERY_S`."""

    def __init__(self, login: Login, prog: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.login, self.prog, self._clock = login, prog, clock
        self._password = login.password
        self._lock = threading.Lock()
        self._said_at: float | None = None

    def __call__(self) -> tuple[str, str]:
        """``(user, password)``: the file's password if it holds one, else the last known."""
        if self.login.file is not None:
            try:
                password = self.login.file.read_text().strip()
            except OSError:
                password = ""
            if password:
                self._password = password
        return self.login.user, self._password

    def refused(self, exc: Exception) -> None:
        """The Config Store refused the login: say so (no secret), once a minute."""
        now = self._clock()
        with self._lock:
            if self._said_at is not None and now - self._said_at < REFUSED_EVERY_S:
                return
            self._said_at = now
        where = self.login.file or "FPLUS_PASSWORD"
        log.error("the Config Store refuses the login of %s with the password in %s (%s): "
                  "its password was replaced, e.g. by a `seed` with another data dir, and "
                  "nothing is synchronised until it logs in again. Put its password into %s "
                  "(read again at every retry) or run `%s seed --rotate-password` with this "
                  "service's data dir", self.login.user, where, exc, where, self.prog)
