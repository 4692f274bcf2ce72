"""Every entry of an app, remembered between changes to it: a notify search's initial state.

When a Config Store restarts, each edge that reconnects opens searches over the same few
apps (its deployments, the chart templates); read from the database, that is a query per
search, all of them waiting for one another under the store's order lock. An app's entries
are remembered until a committed change to one of them, or a reload, is published, so the
searches after the first are answered from memory. A read that a publication overtook is
not remembered: it may be older than what the event said.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ..._storage import Storage
from ..common.events import ConfigChanged, Event, EventBus, Resynced

Entries = list[tuple[str, str, str]]
"""``(object, JSON text, etag)`` of each entry of an app."""

MAX_ENTRIES = 1000
"""An app with more entries than this is read from the database each time."""
MAX_TEXT = 1 << 20
"""Nor is one whose entries hold more than this many characters of JSON in all."""
MAX_APPS = 64
"""Apps remembered at once (all are forgotten when there are more)."""


class AppEntries:
    """``get(app)``: the app's entries, from memory while no change to it was published."""

    def __init__(self, storage: Storage, events: EventBus) -> None:
        self._storage, self._events = storage, events
        self._lock = threading.Lock()
        self._known: dict[str, Entries] = {}
        events.subscribe(self._on_events)

    def _on_events(self, events: Sequence[Event], number: int = 0) -> None:
        with self._lock:
            if any(isinstance(e, Resynced) for e in events):
                self._known.clear()
            for event in events:
                if isinstance(event, ConfigChanged):
                    self._known.pop(event.app, None)

    def get(self, app: str) -> Entries:
        """The entries of ``app`` (a list the caller must not change)."""
        with self._lock:
            known = self._known.get(app)
            published = self._events.published
        if known is not None:
            return known
        entries = self._storage.reader().config_entries(app)
        if len(entries) > MAX_ENTRIES or sum(len(text) for _, text, _ in entries) > MAX_TEXT:
            return entries
        with self._lock:
            if self._events.published == published:  # else a change may have overtaken it
                if len(self._known) >= MAX_APPS:
                    self._known.clear()
                self._known[app] = entries
        return entries
