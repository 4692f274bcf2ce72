"""How a central service that is a principal of the Config Store starts: seeded as the
administrator, logged in as its own principal, its client connected. The Git server's and
the Cluster Manager's commands share it; it knows nothing of the client library (each passes
its own pieces) and says every failure in one line (:class:`.boot.ServiceBoot`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from .boot import Errors, ServiceBoot
from .login import Login

T = TypeVar("T")


class Client(Protocol):
    """A Config Store client that logs in when told to."""

    def connect(self, wait: float = ...) -> Any: ...


C = TypeVar("C", bound=Client)

CONNECT_WAIT_S = 5.0
"""How long start-up waits for the Config Store to answer its client."""


@dataclass(frozen=True)
class CentralService(Generic[C]):
    """The start-up of one central service (``boot.prog``) whose principal is ``principal``."""

    boot: ServiceBoot
    principal: str
    password_file: Callable[[Path], Path]
    """Where ``seed`` keeps the principal's password, given the data dir."""
    as_admin: Callable[[str, Callable[[Any], Path]], Path]
    """``as_admin(url, step)``: ``step(client)`` with a client logged in as the administrator
    of FPLUS_USER / FPLUS_PASSWORD."""
    set_up: Callable[[Any, Path, bool], Path]
    """``set_up(admin, data_dir, rotate)``: the service's seeding; the password file made."""
    client: Callable[[str, str, str], C]
    """``client(url, user, password)``: the service's own client, not connected yet."""
    plain: Errors = ()
    """Failures of seeding said in their own words."""

    def seed(self, url: str, data_dir: Path, rotate: bool = False) -> Path:
        """Seed as the administrator; the password file made (``rotate``: a new password)."""
        return self.boot.seed(
            url, lambda: self.as_admin(url, lambda admin: self.set_up(admin, data_dir, rotate)),
            plain=self.plain)

    def login(self, url: str, data_dir: Path) -> Login:
        """How ``serve`` logs in, never as the administrator (:mod:`.login`)."""
        return self.boot.login(url, self.principal, self.password_file(data_dir),
                               lambda: self.seed(url, data_dir))

    def connect(self, url: str, login: Login) -> C:
        """The service's own client, logged in as ``login``; one line and exit if it cannot be."""
        return self.connect_then(url, login, lambda client: client)

    def connect_then(self, url: str, login: Login, then: Callable[[C], T],
                     statuses: Mapping[int, str] = {}) -> T:
        """``then(client)`` once the client is logged in; a status in ``statuses`` that
        either step fails with is that line and exit."""
        client = self.client(url, login.user, login.password)

        def connect() -> T:
            client.connect(wait=CONNECT_WAIT_S)
            return then(client)

        return self.boot.connect(url, login, connect, statuses)
