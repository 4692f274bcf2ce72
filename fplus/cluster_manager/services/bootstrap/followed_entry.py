"""One Config Store entry kept in memory by a notify WATCH, for answers that read it often.

While the WATCH follows the Config Store (connected, answered, not ended) the entry is served
from memory; otherwise it is read over HTTP, so a lost connection costs a round trip, never a
stale answer beyond the notify delay. ``version`` changes with every delivery, so a caller
may key what it derives from the entry by it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

from fplus.config_store.client import ConfigStoreClient, NotifyClient, Subscription

_versions = itertools.count(1)


class FollowedEntry:
    """The entry ``app``/``obj``; the WATCH starts at the first :meth:`get`."""

    def __init__(self, cs: ConfigStoreClient, app: str, obj: str, *,
                 notify: Callable[[ConfigStoreClient], NotifyClient] | None = None) -> None:
        self.cs, self.app, self.obj = cs, app, obj
        self._make_notify = notify or (lambda c: NotifyClient(c, reconnect_delay=(1.0, 3.0)))
        self._lock = threading.Lock()
        self._notify: NotifyClient | None = None
        self._sub: Subscription | None = None
        self._value: object = None
        self._version: int | None = None

    def get(self) -> tuple[object, int | None]:
        """``(entry, version)``: from memory while followed (``version`` an int), else read
        now (``version`` None: nothing to key by)."""
        with self._lock:
            if self._notify is None:
                self._notify = self._make_notify(self.cs)
                self._sub = self._notify.watch(self.app, self.obj, self._delivered)
            live = self._sub is not None and self._sub.problem is None
            value, version = self._value, self._version
        if live and version is not None:
            return value, version
        return self.cs.get_config(self.app, self.obj), None

    def _delivered(self, value: object) -> None:
        with self._lock:
            self._value, self._version = value, next(_versions)

    def close(self) -> None:
        """Stop following."""
        with self._lock:
            notify, self._notify, self._sub = self._notify, None, None
            self._version = None
        if notify is not None:
            notify.close()
