"""Change events published after each committed write."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from fplus.jsontypes import JsonValue

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConfigChanged:
    """An entry of ``app`` for ``obj`` now holds ``value`` (``etag`` None: deleted)."""

    app: str
    obj: str
    value: JsonValue
    etag: str | None


@dataclass(frozen=True)
class StructureChanged:
    """Some class membership or subclass relation changed."""


@dataclass(frozen=True)
class AuthChanged:
    """Some grant, principal or identity changed (what ACLs and identity lists show)."""


@dataclass(frozen=True)
class Resynced:
    """This replica missed other replicas' changes and reloaded everything: whatever was
    derived from earlier events (a notify subscription's state, a cache) starts again."""


Event = ConfigChanged | StructureChanged | AuthChanged | Resynced
Listener = Callable[[Sequence[Event], int], None]
"""Called with a batch of events and its number (batches are numbered 1, 2, … in order)."""


STRUCTURE = "structure"
"""The interest of listeners in :class:`StructureChanged` (other interests are app uuids)."""
AUTH = "auth"
"""The interest of listeners in :class:`AuthChanged`."""


class EventBus:
    """Fan-out of committed events to listeners (which must not block).

    A listener hears every batch, or, if it subscribed with interests, only batches touching
    one of them (an app's entries, :data:`STRUCTURE` or :data:`AUTH`) and every
    :class:`Resynced`: a write wakes the notify sessions watching its app, not every session
    of a large fleet.

    Publishers hold the store's order lock (:attr:`Core.order`), so batches are numbered in
    the order their changes were read or committed; :attr:`published` is the last number.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # dicts used as ordered sets; a bound method equals (and hashes as) itself each time
        self._everything: dict[Listener, None] = {}
        self._selective: dict[Listener, None] = {}
        self._by_interest: dict[str, dict[Listener, None]] = {}
        self.published = 0

    def subscribe(self, listener: Listener,
                  interests: Iterable[str] | None = None) -> Callable[[], None]:
        """Register ``listener`` for every batch, or (``interests`` given, even empty) for
        batches touching one of them; returns a function that unregisters it."""
        with self._lock:
            if interests is None:
                self._everything[listener] = None
            else:
                self._selective[listener] = None
        if interests is not None:
            self.add_interest(listener, *interests)

        def unsubscribe() -> None:
            with self._lock:
                self._everything.pop(listener, None)
                self._selective.pop(listener, None)
                for listeners in self._by_interest.values():
                    listeners.pop(listener, None)

        return unsubscribe

    def add_interest(self, listener: Listener, *interests: str) -> None:
        """Let a selective ``listener`` also hear batches touching ``interests``."""
        with self._lock:
            for interest in interests:
                self._by_interest.setdefault(interest, {})[listener] = None

    def _audience(self, events: Sequence[Event]) -> list[Listener]:
        if any(isinstance(e, Resynced) for e in events):
            return [*self._everything, *self._selective]
        found = dict(self._everything)
        for e in events:
            interest = (e.app if isinstance(e, ConfigChanged)
                        else AUTH if isinstance(e, AuthChanged) else STRUCTURE)
            found.update(self._by_interest.get(interest, {}))
        return list(found)

    def publish(self, events: Sequence[Event]) -> None:
        """Deliver ``events`` to the listeners they concern."""
        if not events:
            return
        with self._lock:
            self.published += 1
            number = self.published
            audience = self._audience(events)
        for listener in audience:
            try:
                listener(events, number)
            except Exception:
                log.exception("event listener failed")
