"""The base of every notify/v2 subscription."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..common.events import STRUCTURE, Event
from ..store import Store


class Session(Protocol):
    """What a subscription reads of the session it serves (:class:`.session.NotifySession`)."""

    store: Store
    principal: str


class Sub:
    """One subscription; subclasses compute its updates."""

    interest = STRUCTURE
    """What its updates depend on: its app, or class relations (:data:`STRUCTURE`)."""

    def __init__(self, session: Session, uuid: str) -> None:
        self.session, self.uuid = session, uuid
        self.last: bytes = b""
        """A digest of the last update sent, to skip sending the same one twice."""
        self.mark = 0
        """The event batch its initial state was read after: it gets later ones only."""
        self.offered: str | None = None
        """What the client last saw, offered to resume from (``resume`` in its request): the
        kinds that can tell answer an initial state that is still that with a short
        ``UNCHANGED`` (:mod:`fplus.serving.notify.wire`)."""

    @property
    def store(self) -> Store:
        return self.session.store

    @property
    def interests(self) -> tuple[str, ...]:
        """Every interest its updates depend on."""
        return (self.interest,)

    def can(self, perm: str, target: str, obj: str | None = None) -> bool:
        return self.store.core.acl.check(self.session.principal, perm, target, obj=obj)

    def initial(self) -> list[dict]:
        raise NotImplementedError

    def on_events(self, events: Sequence[Event]) -> list[dict]:
        raise NotImplementedError
