"""How a central service's ``serve`` logs in to the Config Store: as its own principal.

``FPLUS_PASSWORD_FILE`` (user ``FPLUS_USER``, default the service's principal); or
``FPLUS_USER=<its principal>`` with ``FPLUS_PASSWORD``; else the password file its ``seed``
step wrote into the data dir. Other credentials in ``FPLUS_USER`` / ``FPLUS_PASSWORD`` are
taken for an administrator's, as before ``seed`` existed: ``serve`` seeds with them first
(they are then dropped from ``os.environ``, so no child process inherits them, though they stay
in this process's initial ``/proc/<pid>/environ``) and says so once it serves.
"""

from __future__ import annotations

import logging
import os
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
