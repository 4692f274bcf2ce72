"""A notify/v2 subscription handle and its delivery of folded updates."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from ._fold import SearchDeltaFold, SearchFold, WatchFold

log = logging.getLogger(__name__)

Callback = Callable[[Any], None]


class Owner(Protocol):
    """What a subscription asks of the notify client that drives it
    (:class:`.notify.NotifyClient`)."""

    @property
    def connected(self) -> bool: ...

    @property
    def problem(self) -> str | None: ...

    def _close_sub(self, sub: Subscription) -> None: ...


class Subscription:
    """One WATCH or SEARCH; :meth:`close` ends it."""

    def __init__(
        self,
        owner: Owner,
        request: dict[str, Any],
        fold: Callable[[], WatchFold | SearchFold | SearchDeltaFold],
        callback: Callback,
    ) -> None:
        self._owner = owner
        self.request = request
        self._new_fold = fold
        self.fold = fold()
        self.callback = callback
        self.uuid: str | None = None
        self.status: int | None = None
        """The last subscription status (201/200; ≥ 400 once the server ended it)."""
        self.closed = False
        self.ended = False
        self.live = False
        """Whether the server has answered this subscription on the current connection (and
        has not ended it): cleared at every (re)subscription and disconnection."""
        self._delivered = threading.Event()

    @property
    def etag(self) -> str | None:
        """For a WATCH, the etag of the last value delivered."""
        return self.fold.etag if isinstance(self.fold, WatchFold) else None

    @property
    def refused(self) -> bool:
        """For a SEARCH: the server refuses to read the app, so the last delivery is empty for
        that reason (not because the app is); the server sends everything once access returns."""
        return isinstance(self.fold, (SearchFold, SearchDeltaFold)) and self.fold.needs_full

    @property
    def problem(self) -> str | None:
        """Why this subscription is not following the server now, in words; None while it is."""
        if self.closed:
            return "the subscription was closed"
        if self.ended:
            return f"the Config Store ended the {self.request['method']} (status {self.status})"
        if not self._owner.connected:
            return f"not connected to notify/v2: {self._owner.problem or 'connecting'}"
        if not self.live:
            return f"the Config Store has not answered the {self.request['method']} yet"
        if self.refused:
            return f"the Config Store refuses the {self.request['method']} (no read access)"
        return None

    def close(self) -> None:
        """Stop delivering and tell the server (``CLOSE``)."""
        self._owner._close_sub(self)

    def wait_initial(self, timeout: float | None = None) -> bool:
        """Wait until the first update was delivered (or the server ended the subscription)."""
        return self._delivered.wait(timeout)

    def _deliver(self, value: Any) -> None:
        if self.closed:
            return
        try:
            self.callback(value)
        except Exception:
            log.exception("notify subscription callback failed")
        finally:
            self._delivered.set()
