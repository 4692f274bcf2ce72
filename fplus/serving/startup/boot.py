"""The start-up steps every central service's ``seed`` and ``serve`` share: seeding as the
administrator, logging in as its own principal, connecting, advertising, each failure one
line and exit instead of a traceback.

Knows nothing of the client library: a service names the exception its client raises
(``failure``, carrying the HTTP ``status``, 0 when nothing answered) and passes the steps as
callables.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from .failures import config_store_failure, require_credentials
from .login import Login, refused_at_start, service_login

log = logging.getLogger(__name__)
T = TypeVar("T")
Errors = tuple[type[BaseException], ...]


class ServiceBoot:
    """The start-up of service ``prog`` whose Config Store client raises ``failure``;
    warnings go to ``logger`` (default this module's)."""

    def __init__(self, prog: str, failure: Errors = (),
                 logger: logging.Logger | None = None) -> None:
        self.prog, self.failure, self.log = prog, failure, logger or log

    @contextlib.contextmanager
    def one_line(self, url: str = "", *, plain: Errors = (), login: Login | None = None,
                 statuses: Mapping[int, str] = {}) -> Iterator[None]:
        """Within: a ``failure`` becomes one line and exit (401 with ``login``: its password
        was refused; a status in ``statuses``: that line), and so does any of ``plain`` (its
        own message)."""
        try:
            yield
        except self.failure as exc:
            status = getattr(exc, "status", 0)
            if status == 401 and login is not None:
                raise SystemExit(refused_at_start(self.prog, url, login)) from None
            if status in statuses:
                raise SystemExit(f"{self.prog}: {statuses[status]}") from None
            raise config_store_failure(self.prog, url, status, str(exc)) from None
        except plain as exc:
            raise SystemExit(f"{self.prog}: {exc}") from None

    def seed(self, url: str, seed: Callable[[], T], *, plain: Errors = ()) -> T:
        """``seed()`` as the administrator of FPLUS_USER / FPLUS_PASSWORD (required)."""
        require_credentials(self.prog)
        with self.one_line(url, plain=plain):
            return seed()

    def login(self, url: str, own: str, password_file: Path, seed: Callable[[], Path], *,
              plain: Errors = ()) -> Login:
        """How ``serve`` logs in as principal ``own`` (:func:`.login.service_login`),
        seeding with ``seed`` first when given an administrator's credentials."""
        return service_login(self.prog, own, password_file,
                             lambda: self.seed(url, seed, plain=plain))

    def connect(self, url: str, login: Login, connect: Callable[[], T],
                statuses: Mapping[int, str] = {}) -> T:
        """``connect()`` (the service's client logging in as ``login``)."""
        with self.one_line(url, login=login, statuses=statuses):
            return connect()

    def advertise(self, url: str | None, advertise: Callable[[str], object]) -> None:
        """Say in the Directory where this service is reached (a failure is one warning)."""
        if url is None:
            self.log.warning("not advertised in the Directory: listening on a wildcard address; "
                        "pass --public-url")
            return
        try:
            advertise(url)
        except self.failure as exc:
            self.log.warning("cannot advertise %s in the Directory: %s", url, exc)
